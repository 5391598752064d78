"""Tests of the ampflow package against a loopback stub of the API
(standard library only): cd clients/python && python3 -m unittest discover -s tests -t ."""

import hashlib
import hmac
import http.server
import json
import logging
import threading
import time
import unittest
import urllib.error
import urllib.request

from ampflow import APIError, Backoff, Callbacks, Client, callback_secret, errors, verify_signature


class Stub(http.server.BaseHTTPRequestHandler):
    """Answers from a script: each request pops (status, headers, body)."""

    script = []
    seen = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Stub.seen.append((self.command, self.path, dict(self.headers), body))
        status, headers, answer = Stub.script.pop(0) if Stub.script else (400, {}, {"error": {"code": "invalid", "message": "no more in the script"}})
        raw = json.dumps(answer).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args):
        pass


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.client = Client("http://127.0.0.1:%d" % self.srv.server_address[1], token="tok-executor-0123", retries=2, timeout=5)
        Stub.script, Stub.seen = [], []

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()

    def test_retries_429_with_retry_after(self):
        Stub.script = [(429, {"Retry-After": "0"}, {"error": {"code": "rate_limited", "message": "slow down"}}),
                       (200, {}, {"role": "executor", "messages": [{"msg_id": "m1", "task_id": "T-2026-001"}]})]
        msgs = self.client.inbox("executor", wait=5)
        self.assertEqual([m["msg_id"] for m in msgs], ["m1"])
        self.assertEqual(len(Stub.seen), 2)
        method, path, headers, _ = Stub.seen[1]
        self.assertEqual((method, path), ("GET", "/v1/inbox?role=executor&wait=5s"))
        self.assertEqual(headers["Authorization"], "Bearer tok-executor-0123")

    def test_gives_up_after_retries(self):
        Stub.script = [(503, {"Retry-After": "0"}, {"error": {"code": "unavailable", "message": "down"}})] * 3
        with self.assertRaises(APIError) as e:
            self.client.heartbeat("T-2026-001", note="building")
        self.assertEqual((e.exception.status, e.exception.code), (503, "unavailable"))
        self.assertEqual(len(Stub.seen), 3)

    def test_refusal_names_fields_and_is_not_retried(self):
        Stub.script = [(400, {}, {"error": {"code": "invalid", "message": "payload.decision: required",
                                            "fields": [{"path": "payload.decision", "problem": "required"}]}})]
        with self.assertRaises(APIError) as e:
            self.client.send("review_verdict", "T-2026-001", {})
        self.assertEqual(e.exception.fields[0]["path"], "payload.decision")
        self.assertEqual(len(Stub.seen), 1)
        self.assertEqual(json.loads(Stub.seen[0][3]), {"type": "review_verdict", "task_id": "T-2026-001", "payload": {}})

    def test_ack_and_lease_bodies(self):
        Stub.script = [(202, {}, {"msg_id": "ack-1", "status": "dispatched"}), (201, {}, {"lease_id": "L1"}), (200, {}, {})]
        self.client.ack({"msg_id": "task_dispatch-T-2026-001-1"}, as_role="executor")
        lease = self.client.acquire("file:a.md", "alice", ttl_seconds=60)
        self.client.release(lease)
        self.assertEqual(json.loads(Stub.seen[0][3]), {"msg_id": "task_dispatch-T-2026-001-1", "as": "executor"})
        self.assertEqual(json.loads(Stub.seen[1][3]), {"resource_key": "file:a.md", "agent_id": "alice", "ttl_seconds": 60})
        self.assertEqual(Stub.seen[2][:2], ("DELETE", "/v1/leases/L1"))


    def test_serve_does_not_ack_held_work_twice(self):
        held = {"msg_id": "task_dispatch-T-2026-001-1", "type": "task_dispatch", "task_id": "T-2026-001"}
        fresh = {"msg_id": "task_dispatch-T-2026-002-1", "type": "task_dispatch", "task_id": "T-2026-002"}
        Stub.script = [(200, {}, {"role": "executor", "messages": [held, fresh],
                                  "acked": [{"msg_id": held["msg_id"], "task_id": "T-2026-001", "by": "exec-1"}]}),
                       (202, {}, {}), (202, {}, {}), (202, {}, {})]
        done = []
        self.client.serve("executor", lambda m: done.append(m["task_id"]) or ("task_result", {"n": len(done)}),
                          stop=lambda: len(done) >= 2)
        self.assertEqual(done, ["T-2026-001", "T-2026-002"])
        self.assertEqual([(m, p) for m, p, _, _ in Stub.seen],
                         [("GET", "/v1/inbox?role=executor&wait=30s&include=acked"), ("POST", "/v1/messages"),
                          ("POST", "/v1/acks"), ("POST", "/v1/messages")])
        self.assertEqual(json.loads(Stub.seen[2][3])["msg_id"], fresh["msg_id"])
        self.assertEqual(json.loads(Stub.seen[1][3]), {"type": "task_result", "task_id": "T-2026-001", "payload": {"n": 1}})  # no from: the API takes it only on an escalation

    def test_serve_goes_on(self):
        # A message another executor won is dropped; a handler that raises
        # is logged and its message tried again after the backoff.
        won = {"msg_id": "task_dispatch-T-2026-001-1", "type": "task_dispatch", "task_id": "T-2026-001"}
        mine = {"msg_id": "task_dispatch-T-2026-002-1", "type": "task_dispatch", "task_id": "T-2026-002"}
        claimed = (409, {}, {"error": {"code": "claimed", "message": "T-2026-001 is held by exec-2", "fields": []}})
        Stub.script = [(200, {}, {"role": "executor", "messages": [won, mine]}), claimed, (202, {}, {}),
                       (200, {}, {"role": "executor", "messages": [won, mine], "acked": [{"msg_id": mine["msg_id"]}]}),
                       (200, {}, {"role": "executor", "messages": [won, mine], "acked": [{"msg_id": mine["msg_id"]}]}),
                       (202, {}, {"msg_id": "r1", "status": "accepted", "warnings": ["diff_summary: 3 lines added, git says 4"]})]
        calls, replies = [], []

        def handle(m):
            calls.append(m.task_id)
            if len(calls) == 1:
                raise RuntimeError("the build broke")
            return "task_result", {"ok": True}

        with self.assertLogs("ampflow", level="INFO") as logs:
            self.client.serve("executor", handle, stop=lambda: bool(replies), on_reply=lambda m, a: replies.append(a),
                              backoff=Backoff(base=0.5))
        self.assertEqual(calls, ["T-2026-002", "T-2026-002"])
        self.assertEqual(replies[0].warnings, ["diff_summary: 3 lines added, git says 4"])
        text = "\n".join(logs.output)
        self.assertIn("RuntimeError: the build broke", text)
        self.assertIn("held by exec-2", text)
        self.assertIn("git says 4", text)
        self.assertEqual([p for _, p, _, _ in Stub.seen],
                         ["/v1/inbox?role=executor&wait=30s&include=acked", "/v1/acks", "/v1/acks"] +
                         ["/v1/inbox?role=executor&wait=30s&include=acked"] * 2 + ["/v1/messages"])

    def test_typed_errors_and_pages(self):
        Stub.script = [(409, {}, {"error": {"code": "LOCK_CONFLICT", "message": "held", "holder": "alice", "retry_after_ms": 900}}),
                       (200, {}, {"leases": [{"lease_id": "L1"}], "next_cursor": "c2"}),
                       (200, {}, {"leases": [{"lease_id": "L2"}]})]
        with self.assertRaises(errors.LockConflict) as e:
            self.client.acquire("file:a.md", "bob")
        self.assertEqual((e.exception.detail["holder"], e.exception.detail["retry_after_ms"]), ("alice", 900))
        self.assertEqual([l.lease_id for l in self.client.leases(agent_id="bob")], ["L1", "L2"])
        self.assertEqual(Stub.seen[2][1], "/v1/leases?agent_id=bob&cursor=c2")

    def test_aof_envelope(self):
        Stub.script = [(200, {}, {"task": {}, "changed": True}), (200, {}, {"applied": []})]
        self.client.aof_report("TASK-2026-02-09-057", "done", "All met.", deliverables=["a.go"], agent="swe-backend")
        self.client.aof_session_end("swe-backend")
        env = json.loads(Stub.seen[0][3])
        self.assertRegex(env.pop("sentAt"), r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(env, {"protocol": "aof", "version": 1, "type": "completion.report", "taskId": "TASK-2026-02-09-057",
                               "fromAgent": "swe-backend", "toAgent": "dispatcher",
                               "payload": {"outcome": "done", "summaryRef": "outputs/summary.md", "deliverables": ["a.go"],
                                           "tests": {"total": 0, "passed": 0, "failed": 0}, "blockers": [], "notes": "All met."}})
        self.assertEqual((Stub.seen[1][1], json.loads(Stub.seen[1][3])), ("/v1/aof/session-end", {"agentId": "swe-backend"}))


def sign(secret, ts, agent, run, url, body):
    signed = ("%s\n%s\n%s\n%s\n" % (ts, agent, run, url)).encode() + body
    return "v2=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


class SignatureTest(unittest.TestCase):
    URL = "http://127.0.0.1:8765/amp/callback"

    def test_callback_secret(self):
        # As docs/gate.md's openssl line: printf resume-tailor | openssl dgst -sha256 -hmac master
        self.assertEqual(callback_secret("master", "resume-tailor"),
                         hmac.new(b"master", b"resume-tailor", hashlib.sha256).hexdigest())

    def test_verify(self):
        body = b'{"status":"approved"}'
        secret = callback_secret("master", "resume-tailor")
        sig = sign(secret, "1700000000", "resume-tailor", "run_1", self.URL, body)
        ok = lambda *a, **kw: verify_signature(*a, now=1700000010, **kw)
        self.assertTrue(ok(secret, "1700000000", sig, body, "resume-tailor", "run_1", self.URL))
        self.assertFalse(ok(callback_secret("master", "spender"), "1700000000", sig, body, "resume-tailor", "run_1", self.URL))
        self.assertFalse(ok("master", "1700000000", sig, body, "resume-tailor", "run_1", self.URL))
        self.assertFalse(ok(secret, "1700000000", sig, body, "resume-tailor", "run_2", self.URL))
        self.assertFalse(ok(secret, "1700000000", sig, body, "spender", "run_1", self.URL))
        self.assertFalse(ok(secret, "1700000000", sig, body, "resume-tailor", "run_1", self.URL + "x"))
        self.assertFalse(ok(secret, "1700000000", sig, body + b" ", "resume-tailor", "run_1", self.URL))
        self.assertFalse(ok(secret, "1700000000", "v1=" + sig[3:], body, "resume-tailor", "run_1", self.URL))
        self.assertFalse(ok("", "1700000000", sig, body, "resume-tailor", "run_1", self.URL))
        self.assertFalse(ok(secret, "soon", sig, body, "resume-tailor", "run_1", self.URL))
        self.assertFalse(verify_signature(secret, "1700000000", sig, body, "resume-tailor", "run_1", self.URL, now=1700001000))

    def test_callbacks_keep_only_signed(self):
        secret = callback_secret("master", "resume-tailor")
        cb = Callbacks(secret, "resume-tailor", "run_1", port=0)
        url = cb.url
        self.addCleanup(cb.close)

        def post(sig_secret):
            body = b'{"gate_id":"gate_1","status":"approved"}'
            ts = str(int(time.time()))
            req = urllib.request.Request(url, body, {"X-AMP-Timestamp": ts,
                                                     "X-AMP-Signature": sign(sig_secret, ts, "resume-tailor", "run_1", url, body)})
            try:
                return urllib.request.urlopen(req, timeout=5).status
            except urllib.error.HTTPError as e:
                return e.code

        self.assertEqual(post(callback_secret("master", "spender")), 401)
        self.assertIsNone(cb.wait(0.1))
        self.assertEqual(post(secret), 204)
        self.assertEqual(cb.wait(5), {"gate_id": "gate_1", "status": "approved"})


if __name__ == "__main__":
    unittest.main()
