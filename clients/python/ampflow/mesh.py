"""Leases and the mesh (docs/mesh.md): a mixin of Client."""

import contextlib
import datetime
import logging
import threading
import time
import urllib.parse

from . import errors
from ._retry import Backoff, transient
from .models import Event, Lease, Model

log = logging.getLogger("ampflow")


def _q(s):
    return urllib.parse.quote(s, safe="")


class Mesh:
    """Leases, mesh events and the mesh inbox loop."""

    # -- leases ---------------------------------------------------------------

    def acquire(self, resource_key, agent_id=None, ttl_seconds=300):
        """Takes a lease for agent_id (default: the token's name); a lease
        held by another raises errors.LockConflict, whose detail names
        holder and retry_after_ms."""
        return Lease.of(self.call("POST", "/v1/leases", {"resource_key": resource_key, "agent_id": agent_id or "",
                                                         "ttl_seconds": ttl_seconds}))

    def renew(self, lease, agent_id=None, ttl_seconds=0):
        lease_id = lease["lease_id"] if isinstance(lease, dict) else lease
        return Lease.of(self.call("POST", "/v1/leases/%s/heartbeat" % _q(lease_id),
                                  {"agent_id": agent_id or "", "ttl": ttl_seconds}))

    def release(self, lease):
        lease_id = lease["lease_id"] if isinstance(lease, dict) else lease
        return Lease.of(self.call("DELETE", "/v1/leases/" + _q(lease_id)))

    def leases(self, **filters):
        """Every lease matching filters (agent_id, state), page by page."""
        return self.pages("/v1/leases", "leases", Lease, **filters)

    @contextlib.contextmanager
    def lease(self, resource_key, ttl=60, wait=None, poll=0.1, agent_id=None):
        """Holds resource_key for the block: `with api.lease("file:a.py", ttl=60) as l:`.

        A lease another agent holds is asked for again every `poll`
        seconds (sooner when its retry_after_ms says it expires), so it is
        taken soon after its holder lets go; after `wait` seconds (None:
        no limit) the LockConflict is raised. While the block runs the
        lease is renewed every ttl/3 seconds; it is released when the block
        ends. A renewal refused (the lease expired or was taken) is logged
        and l.lost is set. Each ask is a writing request: ten a second
        are a token's whole http.rate (600 a minute) by default, so a
        long wait beside other writes takes a larger `poll`."""
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            try:
                held = self.acquire(resource_key, agent_id, ttl_seconds=ttl)
                break
            except errors.LockConflict as e:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise
                pause = poll
                after = e.detail.get("retry_after_ms")
                if isinstance(after, (int, float)) and after >= 0:
                    pause = min(pause, after / 1000)
                time.sleep(pause if left is None else min(pause, left))
        held.lost = False
        done = threading.Event()

        def renew():
            while not done.wait(max(ttl / 3, 0.05)):
                try:
                    self.renew(held, agent_id)
                except Exception as e:
                    if transient(e):
                        log.warning("renewing lease %s on %s: %s; trying again", held.lease_id, resource_key, e)
                        continue
                    log.error("renewing lease %s on %s: %s; the lease is lost", held.lease_id, resource_key, e)
                    held.lost = True
                    return

        t = threading.Thread(target=renew, daemon=True, name="ampflow-lease-" + resource_key)
        t.start()
        try:
            yield held
        finally:
            done.set()
            t.join()
            if not held.lost:
                try:
                    self.release(held)
                except errors.NotFound:
                    pass  # expired meanwhile

    # -- the mesh --------------------------------------------------------------

    def post_event(self, type_, payload, severity="info", event_id=None):
        body = {"type": type_, "severity": severity, "payload": payload}
        if event_id:
            body["id"] = event_id
        return Event.of(self.call("POST", "/v1/events", body))

    def chat(self, to, subject, content, parent=None, task_id=None, sender=None):
        """Sends an agent.chat from `sender` (default: the token's name)."""
        sender = self._name(sender)
        payload = {"from": sender, "from_id": sender, "to": to, "subject": subject, "content": content,
                   "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        if parent:
            payload["parent_message_id"] = parent
        if task_id:
            payload["task_id"] = task_id
        return self.post_event("agent.chat", payload)

    def events_page(self, recipient_id=None, cursor=None, since=None, limit=50, wait=None):
        """One page of the mesh inbox of recipient_id (default: the token's
        name) and broadcasts, oldest first, after `cursor` (the seq of the
        last event read); with `wait` a long poll for a non-empty page."""
        q = {"recipient_id": recipient_id, "include_broadcast": "true", "direction": "asc", "cursor": cursor,
             "since": since, "limit": limit, "wait": None if wait is None else "%ds" % wait}
        page = Model(self.call("GET", "/v1/events/inbox", query=q))
        page["events"] = [Event(e) for e in page.get("events") or []]
        return page

    def events(self, recipient_id=None, since=None, limit=50, wait=None, cursor=None):
        """The events of one page of the mesh inbox (events_page)."""
        return self.events_page(recipient_id, cursor, since, limit, wait).events

    def read(self, event_id, agent_id=None):
        """Marks an event read by `agent_id` (default: the token's name); its
        read_by then names the agent, so a restarted agent skips it."""
        body = {"agent_id": agent_id} if agent_id else {}
        return Event.of(self.call("POST", "/v1/events/%s/read" % _q(event_id), body))

    def thread(self, event_id):
        return Model.of(self.call("GET", "/v1/events/%s/thread" % _q(event_id)))

    def mesh_serve(self, handle, agent=None, wait=30, stop=None, types=("agent.chat",), backoff=None):
        """The mesh agent's loop: long-poll the inbox, and for each event of
        `types` sent to this agent by another and not read by it yet, call
        handle(event) -> reply text (None: no reply), answer in the event's
        thread and mark it read. A handler that raises, or a reply the API
        refuses, is logged and the event tried again after a doubling
        delay; a restarted agent skips what it has read. Runs until stop()
        is true."""
        me = self._name(agent)
        retry, cursor = backoff or Backoff(), None
        while not (stop and stop()):
            try:
                page = self.events_page(me, cursor=cursor, wait=wait)
                retry.ok("inbox")
            except Exception as e:
                if not transient(e):
                    raise
                log.warning("reading %s's mesh inbox: %s; trying again in %.0f s", me, e, retry.failed("inbox"))
                time.sleep(retry.until_due(["inbox"]))
                continue
            for e in page.events:
                if stop and stop():
                    return
                p = e.payload or {}
                mine = e.type in types and p.get("from") != me and not any(r.get("agent_id") == me for r in e.read_by or [])
                if mine:
                    if retry.waiting(e.id):
                        time.sleep(retry.until_due([e.id]))
                    try:
                        reply = handle(e)
                        if reply is not None:
                            self.chat(p.get("from"), "Re: " + (p.get("subject") or ""), reply, parent=e.id, sender=me)
                        self.read(e.id, me)
                        retry.ok(e.id)
                    except Exception as err:
                        delay = retry.failed(e.id)
                        log.error("event %s from %s: %s: %s; trying again in %.0f s", e.id, p.get("from"),
                                  type(err).__name__, err, delay, exc_info=not isinstance(err, errors.APIError))
                        break  # read again from here once the delay has run
                cursor = str(e.seq)
