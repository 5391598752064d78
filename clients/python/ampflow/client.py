"""The HTTP client: transport, identity, AMP tasks and their loop,
decisions and the action gate. Leases and the mesh are in mesh.py, AOF/1
in aof.py; Client has them all."""

import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request

from . import errors
from ._retry import Backoff, transient
from .aof import AOF
from .errors import APIError
from .mesh import Mesh
from .models import Decision, Gate, Identity, Inbox, Message, Model, Submitted, TaskState

log = logging.getLogger("ampflow")

# Refusals that say the work is no longer this agent's: another agent
# holds it, or the task has moved on or ended. A loop drops the message.
GONE = (errors.Claimed, errors.TaskEnded, errors.Unexpected, errors.NotFound)


def quote(s):
    return urllib.parse.quote(s, safe="")


class Client(AOF, Mesh):
    """ampflow's HTTP API as one agent: the token says who it is.

    url and token default to AMPFLOW_API_URL and AMPFLOW_API_TOKEN. 429
    and 503 answers, and a server out of reach, are retried with backoff
    (honouring Retry-After) up to `retries` times; a refusal raises the
    APIError subclass of its code (ampflow.errors)."""

    def __init__(self, url=None, token=None, retries=5, timeout=90):
        self.url = (url or os.environ.get("AMPFLOW_API_URL", "http://127.0.0.1:7480")).rstrip("/")
        self.token = token if token is not None else os.environ.get("AMPFLOW_API_TOKEN")
        self.retries = retries
        self.timeout = timeout
        self._me = None

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
                raise errors.from_answer(e.code, answer) from None
            except urllib.error.URLError:
                if attempt >= self.retries:
                    raise
                time.sleep(_retry_after(None, attempt))
        raise AssertionError("unreachable")

    def pages(self, path, key, model=Model, **query):
        """Every item of a paged listing (GET path, its items under `key`),
        following next_cursor page by page."""
        query = dict(query)
        while True:
            page = self.call("GET", path, query=query)
            for item in page.get(key) or []:
                yield model.of(item)
            if not page.get("next_cursor"):
                return
            query["cursor"] = page["next_cursor"]

    def whoami(self):
        """Who the token is: Identity{name, id, role, open}. Read once and
        kept; the loops take their agent's name from it."""
        if self._me is None:
            self._me = Identity(self.call("GET", "/v1/whoami"))
        return self._me

    def _name(self, agent):
        return agent or self.whoami().name

    # -- AMP tasks: the executor's and the reviewer's loop -------------------

    def inbox(self, role=None, wait=None, include=None):
        """The messages waiting for `role` (default: the token's role),
        long-polling up to `wait` seconds (at most 60) for one to arrive."""
        return self.inbox_page(role, wait, include).messages

    def inbox_page(self, role=None, wait=None, include=None, cursor=None):
        """The whole answer of GET /v1/inbox: role, messages, next_cursor
        and, with include="acked", `acked`: what this agent ACKed and has
        not answered, which stays in its messages until answered, so an
        agent that restarts finds its work."""
        q = {"role": role, "wait": None if wait is None else "%ds" % wait, "include": include, "cursor": cursor}
        return Inbox(self.call("GET", "/v1/inbox", query=q))

    def ack(self, message, as_role=None):
        """ACKs a message (from inbox, or its msg_id). The first ACK holds
        the task: another agent's is refused errors.Claimed."""
        msg_id = message["msg_id"] if isinstance(message, dict) else message
        body = {"msg_id": msg_id}
        if as_role:
            body["as"] = as_role
        return Submitted.of(self.call("POST", "/v1/acks", body))

    def send(self, type_, task_id, payload, from_role=None):
        """Sends a task_result, review_verdict or escalation (the server
        builds the envelope). The answer's warnings name what ampflow found
        amiss, such as a diff_summary that does not match git."""
        body = {"type": type_, "task_id": task_id, "payload": payload}
        if from_role:
            body["from"] = from_role
        return Submitted.of(self.call("POST", "/v1/messages", body))

    def heartbeat(self, task_id, note=None, from_role=None):
        """Restarts the task's heartbeat timer during long work."""
        body = {"task_id": task_id}
        if note:
            body["note"] = note
        if from_role:
            body["from"] = from_role
        return Submitted.of(self.call("POST", "/v1/heartbeats", body))

    def record(self, record_id):
        """A record of a task's chain by id (a review request's refs)."""
        return Model.of(self.call("GET", "/v1/records/" + quote(record_id)))

    def task(self, task_id):
        return TaskState.of(self.call("GET", "/v1/tasks/" + quote(task_id)))

    def tasks(self, **filters):
        """Every task summary matching filters (status, risk, ...), page by page."""
        return self.pages("/v1/tasks", "tasks", **filters)

    def start_task(self, plan, task_id=None, key=None):
        """Starts a task from a plan (a task_dispatch payload); `key` makes
        the start idempotent (Idempotency-Key)."""
        body = {"plan": plan}
        if task_id:
            body["task_id"] = task_id
        return Model.of(self.call("POST", "/v1/tasks", body, headers={"Idempotency-Key": key} if key else None))

    def serve(self, roles, handle, wait=30, stop=None, on_reply=None, backoff=None):
        """The whole loop for one role or several: long-poll each inbox with
        include=acked, ACK each message not ACKed yet, call
        handle(message) -> (type, payload) and send the reply (None sends
        nothing), then on_reply(message, answer) with the answer's warnings.

        It keeps going: a message another agent won (claimed), or whose
        task ended or moved on, is logged and dropped; a handler that
        raises, a reply the API refuses and a server out of reach are
        logged with the error and tried again after a doubling delay
        (backoff, a Backoff; 1 s to 60 s). Work this agent ACKed before a
        restart comes back first and is not ACKed twice. Runs until stop()
        is true."""
        roles = [roles] if isinstance(roles, str) else list(roles)
        wait = wait if len(roles) == 1 else min(wait, 2)
        retry, dropped, down = backoff or Backoff(), set(), Backoff()
        while not (stop and stop()):
            for role in roles:
                try:
                    page = self.inbox_page(role, wait=wait, include="acked")
                    down.ok("inbox")
                except Exception as e:
                    if not transient(e):
                        raise  # a wrong token or URL: the agent cannot work
                    log.warning("reading the %s inbox: %s; trying again in %.0f s", role, e, down.failed("inbox"))
                    time.sleep(down.until_due(["inbox"]))
                    continue
                held = {a.msg_id for a in page.acked}
                todo = [m for m in page.messages if m.msg_id not in dropped]
                for m in todo:
                    if stop and stop():
                        return
                    if not retry.waiting(m.msg_id):
                        self._work(role, m, m.msg_id in held, handle, on_reply, retry, dropped)
                waiting = [m.msg_id for m in todo if retry.waiting(m.msg_id)]
                if waiting and len(waiting) == len(todo):
                    # The inbox answers at once while it holds anything:
                    # wait for the first retry instead of asking again.
                    time.sleep(min(retry.until_due(waiting), wait or 1))

    def _work(self, role, m, held, handle, on_reply, retry, dropped):
        try:
            if not held:
                self.ack(m, as_role=role)
            reply = handle(m)
            if reply:
                # from is only an escalation's: a result or a verdict is
                # its type's sender's (the API refuses it there).
                answer = self.send(reply[0], m.task_id, reply[1], from_role=role if reply[0] == "escalation" else None)
                for w in (answer or {}).get("warnings") or []:
                    log.warning("%s %s: %s", reply[0], m.task_id, w)
                if on_reply:
                    on_reply(m, answer)
            retry.ok(m.msg_id)
        except GONE as e:
            log.info("%s %s (%s): %s; dropped", role, m.msg_id, m.task_id, e)
            dropped.add(m.msg_id)
            retry.ok(m.msg_id)
        except Exception as e:
            delay = retry.failed(m.msg_id)
            log.error("%s %s (%s): %s: %s; trying again in %.0f s", role, m.msg_id, m.task_id, type(e).__name__, e, delay,
                      exc_info=not isinstance(e, APIError))

    # -- decisions -----------------------------------------------------------

    def decisions(self, **filters):
        """Every decision matching filters, page by page."""
        return self.pages("/v1/decisions", "decisions", Decision, **filters)

    def decide(self, decision, option, note=None):
        """Answers a decision (from decisions()) with the digest it was
        shown with; an admin token decides."""
        body = {"option": option, "digest": decision["digest"]}
        if note:
            body["note"] = note
        return Model.of(self.call("POST", "/v1/decisions/" + quote(decision["id"]), body))

    # -- the action gate -----------------------------------------------------

    def signal(self, signal, agent_key=None):
        """Posts a runshift AMP signal (docs/gate.md) with the agent's key
        (AMPFLOW_AGENT_KEY by default); 200 approved, 202 pending."""
        key = agent_key or os.environ.get("AMPFLOW_AGENT_KEY")
        return Gate.of(self.call("POST", "/v1/signals", signal, headers={"Authorization": "Bearer " + key} if key else None))

    def gate(self, gate_id):
        return Gate.of(self.call("GET", "/v1/gates/" + quote(gate_id)))


def _retry_after(header, attempt):
    try:
        return max(0.0, min(float(header), 60.0))
    except (TypeError, ValueError):
        return min(0.5 * 2 ** attempt, 30.0)
