#!/usr/bin/env python3
"""An agent that asks ampflow's action gate before it acts, on the ampflow package (pip install ./clients/python;
docs/guides/gate.md).

It posts one runshift AMP signal with its agent key: 200 approved -> it acts at once; 202 pending -> it waits
for ampflow's callback, checks its v2 signature with its own callback secret, and acts only if approved.
Exit 0 approved, 3 rejected, 1 on any error. Environment: AMPFLOW_API_URL, AMPFLOW_AGENT_KEY (this agent's key),
AMPFLOW_AGENT_ID (resume-tailor), AMPFLOW_PROJECT (job-search), AMPFLOW_RUN_ID (default a new one; the same run
posted again changes nothing), AMPFLOW_WEBHOOK_SECRET (this agent's callback secret, never gate.webhook_secret),
AMPFLOW_WEBHOOK_PORT (8765), AMPFLOW_WAIT (seconds to wait for the callback, 600).
"""
import datetime, json, os, sys, time, uuid
from ampflow import APIError, Callbacks, Client

AGENT, RUN = os.environ.get("AMPFLOW_AGENT_ID", "resume-tailor"), os.environ.get("AMPFLOW_RUN_ID") or "run_" + uuid.uuid4().hex
PRICES = {"claude-sonnet-4-6": (3.00, 15.00)}  # USD per million tokens (input, output), as ampflow prices them

def iso(t): return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

def main():
    hook = Callbacks(os.environ.get("AMPFLOW_WEBHOOK_SECRET", ""), AGENT, RUN, port=int(os.environ.get("AMPFLOW_WEBHOOK_PORT", "8765")))
    started, draft = time.time(), "Tailored resume for the Senior PM role"  # ... the agent's own work ...
    model, tokens_in, tokens_out = "claude-sonnet-4-6", 1842, 614
    try:
        reply = Client().signal({
            "amp_version": "1.0", "agent_id": AGENT, "run_id": RUN, "project_id": os.environ.get("AMPFLOW_PROJECT", "job-search"),
            "status": "completed", "summary": "Rewrote resume for Senior PM role at Stripe",
            "proposed_action": "Send tailored resume to applicant", "artifacts": [{"type": "text", "content": draft}],
            "model": model, "input_tokens": tokens_in, "output_tokens": tokens_out,
            "cost_usd": round((tokens_in * PRICES[model][0] + tokens_out * PRICES[model][1]) / 1e6, 6),
            "gate_required": True, "started_at": iso(started), "completed_at": iso(time.time()),
            "metadata": {"source": "examples/gate_agent.py"}, "webhook_url": hook.url})
    except APIError as e:  # 400 errors.Invalid names each field in e.fields; 402 errors.BudgetExceeded; 409 errors.Conflict
        print("signal refused", e, json.dumps(e.fields), flush=True)
        return 1
    print("signal", json.dumps(reply), flush=True)
    if reply["status"] == "pending":  # only a callback signed for this agent, run and URL gets here
        res = hook.wait(float(os.environ.get("AMPFLOW_WAIT", "600")))
        print("callback", json.dumps(res), flush=True)
        if not res or res["gate_id"] != reply["gate_id"]:
            return 1
        reply = res
    if reply["status"] == "approved":
        print("approved: sending the resume", flush=True)  # ... act ...
        return 0
    print("rejected: not sending", flush=True)
    return 3

if __name__ == "__main__":
    sys.exit(main())
