"""Tests of ampflow_client against a loopback stub of the API (stdlib only):
python3 -m unittest discover -s clients/python."""

import hashlib
import hmac
import http.server
import json
import threading
import unittest

from ampflow_client import APIError, Client, verify_signature


class Stub(http.server.BaseHTTPRequestHandler):
    """Answers from a script: each request pops (status, headers, body)."""

    script = []
    seen = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Stub.seen.append((self.command, self.path, dict(self.headers), body))
        status, headers, answer = Stub.script.pop(0)
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


class SignatureTest(unittest.TestCase):
    def test_verify(self):
        body = b'{"status":"approved"}'
        sig = "v1=" + hmac.new(b"s3cret", b"1700000000." + body, hashlib.sha256).hexdigest()
        self.assertTrue(verify_signature("s3cret", "1700000000", sig, body, now=1700000010))
        self.assertFalse(verify_signature("other", "1700000000", sig, body, now=1700000010))
        self.assertFalse(verify_signature("s3cret", "1700000000", sig, body + b" ", now=1700000010))
        self.assertFalse(verify_signature("s3cret", "1700000000", sig, body, now=1700001000))
        self.assertFalse(verify_signature("s3cret", "soon", sig, body, now=1700000010))


if __name__ == "__main__":
    unittest.main()
