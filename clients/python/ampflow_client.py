"""A client for ampflow agents: one file, Python's standard library only.

    from ampflow_client import Client
    c = Client()                      # AMPFLOW_API_URL, AMPFLOW_API_TOKEN
    for m in c.inbox("executor", wait=30):
        c.ack(m)
        ...                           # do the work
        c.send("task_result", m["task_id"], payload)

Every call returns the API's JSON answer as a dict. A refusal raises
APIError with the API's status, code, message and the fields at fault
(docs/agents.md, "Errors"). 429 and 503 are retried with backoff,
honouring Retry-After, up to `retries` times; other errors are not.
The routes and their schemas are in GET /v1/openapi.json; the guides
in docs/guides/ walk through an agent of each kind.
"""

import datetime
import hashlib
import hmac
import json
import http.server
import os
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["APIError", "Callbacks", "Client", "callback_secret", "verify_signature"]


class APIError(Exception):
    """A refusal of the API: status, code, message, fields (a list of
    {"path", "problem"}) and the whole answer as body."""

    def __init__(self, status, body):
        err = body.get("error", body) if isinstance(body, dict) else {}
        self.status = status
        self.code = err.get("code", "")
        self.message = err.get("message", str(body))
        self.fields = err.get("fields", [])
        self.body = body
        super().__init__("%d %s: %s" % (status, self.code, self.message))


def callback_secret(webhook_secret, agent_id):
    """An agent's own callback secret: the hex HMAC-SHA256 of its id keyed
    with the server's gate.webhook_secret. The operator hands each agent
    its own; an agent never holds gate.webhook_secret."""
    return hmac.new(webhook_secret.encode(), agent_id.encode(), hashlib.sha256).hexdigest()


def verify_signature(secret, timestamp, signature, body, agent_id, run_id, url, max_age=300, now=None):
    """True when a gate callback is ampflow's, for this agent, run and URL,
    and recent (docs/gate.md, "The callback"): `signature` (X-AMP-Signature)
    is "v2=" and the hex HMAC-SHA256, keyed with the agent's callback
    secret, of timestamp, agent_id, run_id and url, each followed by a
    newline, then the body; `timestamp` (X-AMP-Timestamp, Unix seconds) is
    within `max_age` seconds of now."""
    try:
        ts = int(timestamp)
    except (TypeError, ValueError):
        return False
    if not secret or abs((now if now is not None else time.time()) - ts) > max_age:
        return False
    if isinstance(body, str):
        body = body.encode()
    signed = "".join(str(v) + "\n" for v in (timestamp, agent_id, run_id, url)).encode() + body
    mac = hmac.new(secret.encode(), signed, hashlib.sha256)
    return hmac.compare_digest("v2=" + mac.hexdigest(), signature or "")


class Callbacks:
    """Listens for the gate's callbacks to one run on host:port (path
    /amp/callback): a callback whose signature fails is answered 401 and
    dropped, one that passes 204 and kept for wait(). Start it before
    posting the signal, and post `url` as the signal's webhook_url
    (port 0 takes a free port; `url` says which)."""

    def __init__(self, secret, agent_id, run_id, port=8765, host="127.0.0.1", url=None):
        got, cbs = queue.Queue(), self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ok = verify_signature(secret, self.headers.get("X-AMP-Timestamp"), self.headers.get("X-AMP-Signature"),
                                      body, agent_id, run_id, cbs.url)
                self.send_response(204 if ok else 401)
                self.end_headers()
                if ok:
                    got.put(json.loads(body))

            def log_message(self, *args):
                pass

        self._got = got
        self._srv = http.server.ThreadingHTTPServer((host, port), Handler)
        self.url = url or "http://%s:%d/amp/callback" % (host, self._srv.server_address[1])
        threading.Thread(target=self._srv.serve_forever, daemon=True).start()

    def wait(self, timeout=600):
        """The next verified resolution ({gate_id, status, run_id, agent_id,
        resolved_at, resolved_by}), or None after `timeout` seconds."""
        try:
            return self._got.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self):
        self._srv.shutdown()
        self._srv.server_close()


class Client:
    """ampflow's HTTP API as one agent: the token says who it is."""

    def __init__(self, url=None, token=None, retries=5, timeout=90):
        self.url = (url or os.environ.get("AMPFLOW_API_URL", "http://127.0.0.1:7480")).rstrip("/")
        self.token = token if token is not None else os.environ.get("AMPFLOW_API_TOKEN")
        self.retries = retries
        self.timeout = timeout

    # -- transport ---------------------------------------------------------

    def call(self, method, path, body=None, query=None, headers=None):
        """One request; returns the decoded answer (None when empty)."""
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                path += "?" + urllib.parse.urlencode(q, doseq=True)
        data = None if body is None else json.dumps(body).encode()
        head = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            head["Authorization"] = "Bearer " + self.token
        head.update(headers or {})
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.url + path, data, head, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    raw = r.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as e:
                raw = e.read()
                try:
                    answer = json.loads(raw) if raw else {}
                except ValueError:
                    answer = {"error": {"code": "", "message": raw.decode(errors="replace")}}
                if e.code in (429, 503) and attempt < self.retries:
                    time.sleep(_retry_after(e.headers.get("Retry-After"), attempt))
                    continue
                raise APIError(e.code, answer) from None
            except urllib.error.URLError:
                if attempt >= self.retries:
                    raise
                time.sleep(_retry_after(None, attempt))
        raise AssertionError("unreachable")

    # -- AMP tasks: the executor's and the reviewer's loop -------------------

    def inbox(self, role=None, wait=None, include=None):
        """The messages waiting for `role` (default: the token's role),
        long-polling up to `wait` seconds (at most 60) for one to arrive."""
        return self.inbox_page(role, wait, include)["messages"]

    def inbox_page(self, role=None, wait=None, include=None):
        """The whole answer of GET /v1/inbox: role, messages, next_cursor
        and, with include="acked", `acked`: what this agent ACKed and has
        not answered ({msg_id, task_id, by, acked_at}), which stays in its
        messages until answered, so an agent that restarts finds its work."""
        q = {"role": role, "wait": None if wait is None else "%ds" % wait, "include": include}
        return self.call("GET", "/v1/inbox", query=q)

    def ack(self, message, as_role=None):
        """ACKs a message (a dict from inbox, or its msg_id)."""
        msg_id = message["msg_id"] if isinstance(message, dict) else message
        body = {"msg_id": msg_id}
        if as_role:
            body["as"] = as_role
        return self.call("POST", "/v1/acks", body)

    def send(self, type_, task_id, payload, from_role=None):
        """Sends a task_result, review_verdict or escalation (the server
        builds the envelope)."""
        body = {"type": type_, "task_id": task_id, "payload": payload}
        if from_role:
            body["from"] = from_role
        return self.call("POST", "/v1/messages", body)

    def heartbeat(self, task_id, note=None, from_role=None):
        """Restarts the task's heartbeat timer during long work."""
        body = {"task_id": task_id}
        if note:
            body["note"] = note
        if from_role:
            body["from"] = from_role
        return self.call("POST", "/v1/heartbeats", body)

    def record(self, record_id):
        """A record of a task's chain by id (a review request's refs)."""
        return self.call("GET", "/v1/records/" + urllib.parse.quote(record_id, safe=""))

    def task(self, task_id):
        return self.call("GET", "/v1/tasks/" + urllib.parse.quote(task_id, safe=""))

    def start_task(self, plan, task_id=None, key=None):
        """Starts a task from a plan (a task_dispatch payload); `key` makes
        the start idempotent (Idempotency-Key)."""
        body = {"plan": plan}
        if task_id:
            body["task_id"] = task_id
        return self.call("POST", "/v1/tasks", body, headers={"Idempotency-Key": key} if key else None)

    def serve(self, roles, handle, wait=30, stop=None):
        """The whole loop for one role or several: long-poll each inbox with
        include=acked, ACK each message not ACKed yet, call
        handle(message) -> (type, payload) and send the reply (None sends
        nothing). Work an earlier run of this agent ACKed and did not answer
        comes back in the inbox and is done again, not ACKed twice. Runs
        until stop() is true."""
        roles = [roles] if isinstance(roles, str) else list(roles)
        wait = wait if len(roles) == 1 else min(wait, 2)
        while not (stop and stop()):
            for role in roles:
                page = self.inbox_page(role, wait=wait, include="acked")
                held = {a["msg_id"] for a in page.get("acked") or []}
                for m in page["messages"]:
                    if m["msg_id"] not in held:
                        self.ack(m, as_role=role)
                    reply = handle(m)
                    if reply:
                        # from is only an escalation's: a result or a verdict
                        # is its type's sender's (the API refuses it there).
                        self.send(reply[0], m["task_id"], reply[1], from_role=role if reply[0] == "escalation" else None)

    # -- decisions -----------------------------------------------------------

    def decisions(self, **filters):
        return self.call("GET", "/v1/decisions", query=filters)["decisions"]

    def decide(self, decision, option, note=None):
        """Answers a decision (a dict from decisions()) with the digest it
        was shown with; an admin token decides."""
        body = {"option": option, "digest": decision["digest"]}
        if note:
            body["note"] = note
        return self.call("POST", "/v1/decisions/" + urllib.parse.quote(decision["id"], safe=""), body)

    # -- the action gate -----------------------------------------------------

    def signal(self, signal, agent_key=None):
        """Posts a runshift AMP signal (docs/gate.md) with the agent's key
        (AMPFLOW_AGENT_KEY by default); 200 approved, 202 pending."""
        key = agent_key or os.environ.get("AMPFLOW_AGENT_KEY")
        return self.call("POST", "/v1/signals", signal, headers={"Authorization": "Bearer " + key} if key else None)

    def gate(self, gate_id):
        return self.call("GET", "/v1/gates/" + urllib.parse.quote(gate_id, safe=""))

    # -- leases ---------------------------------------------------------------

    def acquire(self, resource_key, agent_id, ttl_seconds=300):
        """Takes a lease; a lease held by another agent raises APIError
        with code LOCK_CONFLICT, its body naming holder and retry_after_ms."""
        return self.call("POST", "/v1/leases", {"resource_key": resource_key, "agent_id": agent_id, "ttl_seconds": ttl_seconds})

    def renew(self, lease, agent_id, ttl_seconds=0):
        lease_id = lease["lease_id"] if isinstance(lease, dict) else lease
        return self.call("POST", "/v1/leases/%s/heartbeat" % urllib.parse.quote(lease_id, safe=""), {"agent_id": agent_id, "ttl": ttl_seconds})

    def release(self, lease):
        lease_id = lease["lease_id"] if isinstance(lease, dict) else lease
        return self.call("DELETE", "/v1/leases/" + urllib.parse.quote(lease_id, safe=""))

    def leases(self, **filters):
        return self.call("GET", "/v1/leases", query=filters)["leases"]

    # -- the mesh --------------------------------------------------------------

    def post_event(self, type_, payload, severity="info", event_id=None):
        body = {"type": type_, "severity": severity, "payload": payload}
        if event_id:
            body["id"] = event_id
        return self.call("POST", "/v1/events", body)

    def chat(self, sender, to, subject, content, parent=None, task_id=None):
        """Sends an agent.chat as `sender` (the token's name)."""
        payload = {"from": sender, "from_id": sender, "to": to, "subject": subject, "content": content,
                   "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        if parent:
            payload["parent_message_id"] = parent
        if task_id:
            payload["task_id"] = task_id
        return self.post_event("agent.chat", payload)

    def events(self, recipient_id, since=None, limit=50, wait=None):
        """The mesh inbox of `recipient_id`, oldest first."""
        q = {"recipient_id": recipient_id, "include_broadcast": "true", "direction": "asc",
             "since": since, "limit": limit, "wait": None if wait is None else "%ds" % wait}
        return self.call("GET", "/v1/events/inbox", query=q)["events"]

    def read(self, event_id, agent_id=None):
        """Marks an event read by `agent_id` (default: the token's name); its
        read_by then names the agent, so a restarted agent skips it."""
        body = {"agent_id": agent_id} if agent_id else {}
        return self.call("POST", "/v1/events/%s/read" % urllib.parse.quote(event_id, safe=""), body)

    def thread(self, event_id):
        return self.call("GET", "/v1/events/%s/thread" % urllib.parse.quote(event_id, safe=""))


    # -- AOF/1 (docs/aof.md): an agent's own task --------------------------------

    def aof_task(self, task_id):
        """An AOF task: status, run, heartbeat, result, work log, artifacts."""
        return self.call("GET", "/v1/aof/tasks/" + urllib.parse.quote(task_id, safe=""))

    def aof_send(self, type_, task_id, from_agent, payload, to_agent="dispatcher"):
        """Posts one AOF/1 envelope (completion.report, status.update,
        handoff.*) to POST /v1/aof/messages; answers {"task", "changed"}."""
        now = datetime.datetime.now(datetime.timezone.utc)
        return self.call("POST", "/v1/aof/messages", {
            "protocol": "aof", "version": 1, "type": type_, "taskId": task_id, "fromAgent": from_agent,
            "toAgent": to_agent, "sentAt": now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000),
            "payload": payload})

    def aof_status(self, task_id, agent_id, progress=None, notes=None, status=None, blockers=None):
        """A status.update: a work-log line, or a move to `status`."""
        p = {"taskId": task_id, "agentId": agent_id, "progress": progress, "notes": notes, "status": status, "blockers": blockers}
        return self.aof_send("status.update", task_id, agent_id, {k: v for k, v in p.items() if v is not None})

    def aof_heartbeat(self, task_id, agent_id):
        """Renews the run's heartbeat (and its lease) within its ttlMs."""
        return self.call("POST", "/v1/aof/tasks/%s/heartbeat" % urllib.parse.quote(task_id, safe=""), {"agentId": agent_id})

    def aof_report(self, task_id, agent_id, outcome, notes, summary_ref="outputs/summary.md", deliverables=(),
                   tests=None, blockers=()):
        """A completion.report; its outcome (done, blocked, needs_review,
        partial) is applied when the session ends."""
        return self.aof_send("completion.report", task_id, agent_id, {
            "outcome": outcome, "summaryRef": summary_ref, "deliverables": list(deliverables),
            "tests": tests or {"total": 0, "passed": 0, "failed": 0}, "blockers": list(blockers), "notes": notes})

    def aof_session_end(self, agent_id):
        """Ends the agent's session: its reported runs move as reported."""
        return self.call("POST", "/v1/aof/session-end", {"agentId": agent_id})

    def aof_events(self, task_id=None):
        return self.call("GET", "/v1/aof/events", query={"task_id": task_id})["events"]


def _retry_after(header, attempt):
    try:
        return max(0.0, min(float(header), 60.0))
    except (TypeError, ValueError):
        return min(0.5 * 2 ** attempt, 30.0)
