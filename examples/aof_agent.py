#!/usr/bin/env python3
# An AOF/1 agent on the client (clients/python; docs/guides/aof.md): python3 aof_agent.py TASK-ID
# env AMPFLOW_API_URL, AMPFLOW_API_TOKEN (an executor's token named as the agent), AMPFLOW_AGENT_NAME (swe-backend).
# It works the task a dispatcher gave it: progress, heartbeats, a completion report, then its session ends.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from ampflow_client import APIError, Client

api, me, task_id = Client(), os.environ.get("AMPFLOW_AGENT_NAME", "swe-backend"), sys.argv[1]

task = api.aof_task(task_id)
if task["status"] != "in_progress" or (task.get("run") or {}).get("agentId") != me:
    sys.exit("%s is %s, not running as %s: nothing to do" % (task_id, task["status"], me))
done = []
for step in ["read the task: " + task["title"], "wrote the code", "ran the tests"]:  # ... the agent's own work ...
    done.append(step)
    api.aof_heartbeat(task_id, me)  # within the run's ttlMs, or the run is reclaimed
    api.aof_status(task_id, me, progress="%d/3: %s" % (len(done), step))
try:
    api.aof_report(task_id, me, "done", "All acceptance criteria met.", deliverables=["src/users.py"],
                   tests={"total": 3, "passed": 3, "failed": 0})
except APIError as e:  # the seed protocol's own codes: invalid_envelope (e.fields names each), not_running, ...
    sys.exit("report refused: %s %s" % (e, e.fields))
ended = api.aof_session_end(me)  # the report's outcome applies now: done -> review
print("session ended:", [(t["taskId"], t["status"]) for t in ended["applied"]], flush=True)
