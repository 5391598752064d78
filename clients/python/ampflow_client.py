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
The routes and their schemas are in GET /v1/openapi.json.
"""

import datetime
import hashlib
import hmac
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["APIError", "Client", "verify_signature"]


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


def verify_signature(secret, timestamp, signature, body, max_age=300, now=None):
    """True when `signature` (the X-AMP-Signature header, "v1=<hex>") is the
    HMAC-SHA256 of "<timestamp>.<body>" under `secret`, and `timestamp`
    (X-AMP-Timestamp, Unix seconds) is within `max_age` seconds of now."""
    try:
        ts = int(timestamp)
    except (TypeError, ValueError):
        return False
    if abs((now if now is not None else time.time()) - ts) > max_age:
        return False
    if isinstance(body, str):
        body = body.encode()
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest("v1=" + mac.hexdigest(), signature or "")


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
        long-polling up to `wait` seconds (at most 60) for one to arrive.
        include="acked" also lists what this agent ACKed and has not
        answered yet, so an agent that restarts finds its work."""
        q = {"role": role, "wait": None if wait is None else "%ds" % wait, "include": include}
        return self.call("GET", "/v1/inbox", query=q)["messages"]

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

    def serve(self, role, handle, wait=30, stop=None):
        """The whole loop: long-poll `role`'s inbox, ACK each message, call
        handle(message) -> (type, payload) and send the reply. Work an
        earlier run of this agent ACKed is picked up first. Runs until
        stop() is true."""
        include = "acked"
        while not (stop and stop()):
            for m in self.inbox(role, wait=wait, include=include):
                if not m.get("acked"):
                    self.ack(m, as_role=role)
                type_, payload = handle(m)
                self.send(type_, m["task_id"], payload)
            include = None

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

    def thread(self, event_id):
        return self.call("GET", "/v1/events/%s/thread" % urllib.parse.quote(event_id, safe=""))


def _retry_after(header, attempt):
    try:
        return max(0.0, min(float(header), 60.0))
    except (TypeError, ValueError):
        return min(0.5 * 2 ** attempt, 30.0)
