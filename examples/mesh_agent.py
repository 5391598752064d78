#!/usr/bin/env python3
# A mesh agent on the ampflow package (pip install ./clients/python; docs/guides/mesh.md): python3 mesh_agent.py
# env AMPFLOW_API_URL, AMPFLOW_API_TOKEN (its token's name is its mesh id), AMPFLOW_MAX_MESSAGES (stop after this
# many; default never), AMPFLOW_LEASE_WAIT (seconds to wait for a held file; default 0, answer with its holder).
# It answers each agent.chat sent to it, "review <path>", holding the lease file:<path> while it works.
import os, time
import ampflow

api, left = ampflow.Client(), [int(os.environ.get("AMPFLOW_MAX_MESSAGES", "0")) or None]

def answer(e):
    key = "file:" + e.payload["content"].split()[-1]
    left[0] = left[0] and left[0] - 1
    try:
        with api.lease(key, ttl=60, wait=float(os.environ.get("AMPFLOW_LEASE_WAIT", "0"))):  # renewed while held
            time.sleep(0.2)  # ... the agent's own work on the file ...
            reply = "reviewed %s: looks good" % key[len("file:"):]
    except ampflow.errors.LockConflict as err:  # still held after the wait: name the holder
        reply = "busy: %s is held by %s; ask again in %d s" % (key, err.detail["holder"], err.detail["retry_after_ms"] // 1000)
    print(e.payload["from"], "<-", reply, flush=True)
    return reply  # sent in the thread; the event is then marked read, so a restart skips it

api.mesh_serve(answer, stop=lambda: left[0] == 0)  # long-polls the mesh inbox
