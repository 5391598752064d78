#!/usr/bin/env python3
# An AOF/1 agent on the ampflow package (pip install ./clients/python; docs/guides/aof.md): python3 aof_agent.py
# env AMPFLOW_API_URL, AMPFLOW_API_TOKEN (an executor's token, its name the agent id), AMPFLOW_MAX_TASKS (stop after
# this many; default never). It works each task a dispatcher gives it: progress, heartbeats, a report; the loop
# then ends its session so the outcome applies (done -> review).
import os
import ampflow

api, left = ampflow.Client(), [int(os.environ.get("AMPFLOW_MAX_TASKS", "0")) or None]

def work(task):
    for n, step in enumerate(["read the task: " + task.title, "wrote the code", "ran the tests"], 1):  # ... the agent's own work ...
        api.aof_heartbeat(task.taskId)  # within the run's ttlMs, or the run is reclaimed
        api.aof_status(task.taskId, progress="%d/3: %s" % (n, step))
    print("reported", task.taskId, flush=True)
    left[0] = left[0] and left[0] - 1
    return {"outcome": "done", "notes": "All acceptance criteria met.", "deliverables": ["src/users.py"],
            "tests": {"total": 3, "passed": 3, "failed": 0}}

print("working as", api.whoami().name, flush=True)
api.aof_serve(work, stop=lambda: left[0] == 0)  # long-polls GET /v1/aof/tasks?assignee=me&status=in_progress
