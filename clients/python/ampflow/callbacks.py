"""The action gate's signed callbacks (docs/gate.md, "The callback")."""

import hashlib
import hmac
import http.server
import json
import queue
import threading
import time

__all__ = ["Callbacks", "callback_secret", "verify_signature"]


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
