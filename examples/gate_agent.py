#!/usr/bin/env python3
"""An agent that asks ampflow's action gate before it acts (standard library only).

It posts one runshift AMP signal to POST /v1/signals with its agent key, then:
  200 approved -> acts at once (no gate fired);
  202 pending  -> waits for ampflow's signed callback on its webhook and acts
                  only if the callback says approved.
It exits 0 when approved, 3 when rejected, 1 on any error.

Environment:
  AMPFLOW_API_URL        ampflow's API (default http://127.0.0.1:7480)
  AMPFLOW_AGENT_KEY      this agent's key (gate.agents[].key_env on the server)
  AMPFLOW_AGENT_ID       this agent's id (default resume-tailor)
  AMPFLOW_PROJECT        the project (default job-search)
  AMPFLOW_RUN_ID         the run id (default: a new uuid4); posting a run again changes nothing
  AMPFLOW_WEBHOOK_SECRET this agent's callback secret, to check the callback's signature:
                         the hex HMAC-SHA256 of the agent id keyed with gate.webhook_secret
                         (never gate.webhook_secret itself)
  AMPFLOW_WEBHOOK_PORT   where to listen for the callback (default 8765, on 127.0.0.1)
  AMPFLOW_WEBHOOK_URL    the webhook_url to post (default http://127.0.0.1:<port>/amp/callback)
  AMPFLOW_WAIT           seconds to wait for the callback (default 600)
"""
import datetime
import hashlib
import hmac
import http.server
import json
import os
import queue
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

API = os.environ.get("AMPFLOW_API_URL", "http://127.0.0.1:7480").rstrip("/")
KEY = os.environ["AMPFLOW_AGENT_KEY"]
AGENT = os.environ.get("AMPFLOW_AGENT_ID", "resume-tailor")
PROJECT = os.environ.get("AMPFLOW_PROJECT", "job-search")
RUN_ID = os.environ.get("AMPFLOW_RUN_ID") or "run_" + uuid.uuid4().hex
SECRET = os.environ.get("AMPFLOW_WEBHOOK_SECRET", "")
PORT = int(os.environ.get("AMPFLOW_WEBHOOK_PORT", "8765"))
WAIT = float(os.environ.get("AMPFLOW_WAIT", "600"))
CALLBACK_URL = os.environ.get("AMPFLOW_WEBHOOK_URL") or "http://127.0.0.1:%d/amp/callback" % PORT

# USD per million tokens (input, output), as in ampflow's default pricing.
PRICES = {"claude-sonnet-4-6": (3.00, 15.00), "gpt-4o": (2.50, 10.00)}

resolutions = queue.Queue()


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cost(model, tokens_in, tokens_out):
    p_in, p_out = PRICES.get(model, (0, 0))
    return tokens_in / 1e6 * p_in + tokens_out / 1e6 * p_out


def verified(ts, signature, body):
    """Whether a callback is ampflow's, for this agent, this run and this URL, and recent.

    X-AMP-Signature is v2= and the hex HMAC-SHA256, keyed with this agent's
    secret, of the timestamp, agent id, run id and webhook URL (each followed
    by a newline) and the body: a callback signed for another agent, run or
    URL fails here, and no agent holds another's secret.
    """
    if not SECRET or not ts.isdigit() or abs(time.time() - int(ts)) > 300:  # refuse replays of old callbacks
        return False
    signed = "".join(s + "\n" for s in (ts, AGENT, RUN_ID, CALLBACK_URL)).encode() + body
    want = "v2=" + hmac.new(SECRET.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, signature)


class Callback(http.server.BaseHTTPRequestHandler):
    """Takes ampflow's resolution: checks X-AMP-Signature, then queues it."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not verified(self.headers.get("X-AMP-Timestamp", ""), self.headers.get("X-AMP-Signature", ""), body):
            self.send_response(401)
            self.end_headers()
            return
        self.send_response(204)
        self.end_headers()
        resolutions.put(json.loads(body))

    def log_message(self, *args):
        pass


def post_signal(payload):
    req = urllib.request.Request(API + "/v1/signals", data=json.dumps(payload).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def main():
    server = http.server.HTTPServer(("127.0.0.1", PORT), Callback)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    started = time.time()
    draft = "Tailored resume for the Senior PM role"  # ... the agent's own work ...
    tokens_in, tokens_out, model = 1842, 614, "claude-sonnet-4-6"
    status, reply = post_signal({
        "amp_version": "1.0",
        "agent_id": AGENT,
        "run_id": RUN_ID,
        "project_id": PROJECT,
        "status": "completed",
        "summary": "Rewrote resume for Senior PM role at Stripe",
        "proposed_action": "Send tailored resume to applicant",
        "artifacts": [{"type": "text", "content": draft}],
        "model": model,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": round(cost(model, tokens_in, tokens_out), 6),
        "gate_required": True,
        "started_at": iso(started),
        "completed_at": iso(time.time()),
        "metadata": {"source": "examples/gate_agent.py"},
        "webhook_url": CALLBACK_URL,
    })
    print("signal", status, json.dumps(reply), flush=True)
    if status not in (200, 202):
        return 1
    if reply["status"] == "pending":
        try:
            res = resolutions.get(timeout=WAIT)
        except queue.Empty:
            print("no resolution within %ds" % WAIT, flush=True)
            return 1
        print("callback", json.dumps(res), flush=True)
        if res["gate_id"] != reply["gate_id"]:
            return 1
        reply = res
    if reply["status"] == "approved":
        print("approved: sending the resume", flush=True)  # ... act ...
        return 0
    print("rejected: not sending", flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main())
