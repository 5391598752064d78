#!/usr/bin/env python3
# A mesh agent on the client (clients/python; docs/guides/mesh.md): python3 mesh_agent.py
# env AMPFLOW_API_URL, AMPFLOW_API_TOKEN (its token's name is its mesh id), AMPFLOW_AGENT_NAME (bob),
# AMPFLOW_MAX_MESSAGES (stop after this many; default never). It answers each agent.chat sent to it,
# "review <path>", holding the lease file:<path> while it works; a held file is answered with who holds it.
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from ampflow_client import APIError, Client

api, me = Client(), os.environ.get("AMPFLOW_AGENT_NAME", "bob")
left = int(os.environ.get("AMPFLOW_MAX_MESSAGES", "0")) or None

def answer(e):
    p = e["payload"]
    key = "file:" + p["content"].split()[-1]
    try:
        lease = api.acquire(key, me, ttl_seconds=60)
    except APIError as err:  # the mesh's own codes: LOCK_CONFLICT names the holder and when to retry
        if err.code != "LOCK_CONFLICT":
            raise
        return "busy: %s is held by %s; ask again in %d s" % (key, err.body["error"]["holder"], err.body["error"]["retry_after_ms"] // 1000)
    try:
        time.sleep(0.2)  # ... the agent's own work on the file, renewing the lease if it takes long ...
        return "reviewed %s: looks good" % key[len("file:"):]
    finally:
        api.release(lease)

since = None  # the inbox pages oldest first from `since`; what this agent has read is marked, so a restart skips it
while left is None or left > 0:
    page = api.events(me, since=since, wait=30)
    for e in page:
        since = e["created_at"]
        if e["type"] != "agent.chat" or e["payload"]["from"] == me or any(r["agent_id"] == me for r in e["read_by"]):
            continue
        reply = answer(e)
        api.chat(me, e["payload"]["from"], "Re: " + e["payload"]["subject"], reply, parent=e["id"])
        api.read(e["id"], me)
        print(e["payload"]["from"], "<-", reply, flush=True)
        left = None if left is None else left - 1
    if not page:
        time.sleep(1)  # the mesh inbox does not long-poll yet: look again in a second
