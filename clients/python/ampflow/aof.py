"""AOF/1 (docs/aof.md): an agent's own tasks; a mixin of Client."""

import datetime
import logging
import time
import urllib.parse

from . import errors
from ._retry import Backoff, transient
from .models import AOFTask, Model

log = logging.getLogger("ampflow")

# Refusals that say the task is no longer this agent's to report.
GONE = (errors.NotRunning, errors.InvalidTransition, errors.LeaseHeld, errors.TaskNotFound, errors.Forbidden)


def _q(s):
    return urllib.parse.quote(s, safe="")


class AOF:
    """AOF/1 tasks, messages, heartbeats and the AOF agent's loop."""

    def aof_task(self, task_id):
        """An AOF task: status, run, heartbeat, result, work log, artifacts."""
        return AOFTask.of(self.call("GET", "/v1/aof/tasks/" + _q(task_id)))

    def aof_tasks_page(self, assignee=None, status=None, wait=None, cursor=None, limit=None):
        """One page of GET /v1/aof/tasks: assignee "me" is the token's own
        work (assigned or dispatched to it); with `wait` a long poll for a
        non-empty page."""
        q = {"assignee": assignee, "status": status, "wait": None if wait is None else "%ds" % wait,
             "cursor": cursor, "limit": limit}
        page = Model(self.call("GET", "/v1/aof/tasks", query=q))
        page["tasks"] = [AOFTask(t) for t in page.get("tasks") or []]
        return page

    def aof_tasks(self, **filters):
        """Every AOF task matching filters (assignee, status), page by page."""
        return self.pages("/v1/aof/tasks", "tasks", AOFTask, **filters)

    def my_aof_work(self, wait=None):
        """The AOF tasks dispatched to this agent and running: a long poll
        of assignee=me, status=in_progress."""
        me = self.whoami().name
        return [t for t in self.aof_tasks_page("me", "in_progress", wait).tasks if (t.run or {}).get("agentId") == me]

    def aof_send(self, type_, task_id, payload, from_agent=None, to_agent="dispatcher"):
        """Posts one AOF/1 envelope (completion.report, status.update,
        handoff.*) to POST /v1/aof/messages; answers {"task", "changed"}.
        from_agent defaults to the token's name."""
        now = datetime.datetime.now(datetime.timezone.utc)
        return Model.of(self.call("POST", "/v1/aof/messages", {
            "protocol": "aof", "version": 1, "type": type_, "taskId": task_id, "fromAgent": self._name(from_agent),
            "toAgent": to_agent, "sentAt": now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000),
            "payload": payload}))

    def aof_status(self, task_id, progress=None, notes=None, status=None, blockers=None, agent=None):
        """A status.update: a work-log line, or a move to `status`."""
        agent = self._name(agent)
        p = {"taskId": task_id, "agentId": agent, "progress": progress, "notes": notes, "status": status, "blockers": blockers}
        return self.aof_send("status.update", task_id, {k: v for k, v in p.items() if v is not None}, agent)

    def aof_heartbeat(self, task_id, agent=None):
        """Renews the run's heartbeat (and its lease) within its ttlMs."""
        return AOFTask.of(self.call("POST", "/v1/aof/tasks/%s/heartbeat" % _q(task_id), {"agentId": self._name(agent)}))

    def aof_report(self, task_id, outcome, notes, summary_ref="outputs/summary.md", deliverables=(), tests=None,
                   blockers=(), agent=None):
        """A completion.report; its outcome (done, blocked, needs_review,
        partial) is applied when the session ends. The same report sent
        again changes nothing; another, once the task has left
        in_progress, is refused errors.NotRunning."""
        return self.aof_send("completion.report", task_id, {
            "outcome": outcome, "summaryRef": summary_ref, "deliverables": list(deliverables),
            "tests": tests or {"total": 0, "passed": 0, "failed": 0}, "blockers": list(blockers), "notes": notes}, agent)

    def aof_session_end(self, agent=None):
        """Ends the agent's session: its reported runs move as reported."""
        return Model.of(self.call("POST", "/v1/aof/session-end", {"agentId": self._name(agent)}))

    def aof_events(self, task_id=None):
        """Every logged AOF event, of one task or all, page by page."""
        return self.pages("/v1/aof/events", "events", task_id=task_id)

    def aof_serve(self, handle, wait=30, stop=None, backoff=None):
        """The AOF agent's loop: long-poll the tasks dispatched to this
        agent (my_aof_work), call handle(task) -> the keyword arguments of
        aof_report (outcome, notes, deliverables, tests, ...), or None when
        the handler reported itself, then end the session so the outcome
        applies. A task reclaimed, moved or handed on meanwhile is logged
        and dropped; a handler that raises, or a report the API refuses,
        is logged and tried again after a doubling delay. Runs until
        stop() is true."""
        retry, dropped, me = backoff or Backoff(), set(), self.whoami().name
        while not (stop and stop()):
            try:
                work = [t for t in self.my_aof_work(wait) if t.taskId not in dropped]
                retry.ok("poll")
            except Exception as e:
                if not transient(e):
                    raise
                log.warning("reading AOF work: %s; trying again in %.0f s", e, retry.failed("poll"))
                time.sleep(retry.until_due(["poll"]))
                continue
            for t in work:
                if stop and stop():
                    return
                if retry.waiting(t.taskId):
                    continue
                try:
                    if not _reported(t, me):  # else only the session end is left
                        report = handle(t)
                        if report is not None:
                            self.aof_report(t.taskId, **report)
                    self.aof_session_end()
                    retry.ok(t.taskId)
                except GONE as e:
                    log.info("AOF task %s: %s; dropped", t.taskId, e)
                    dropped.add(t.taskId)
                except Exception as e:
                    delay = retry.failed(t.taskId)
                    log.error("AOF task %s: %s: %s; trying again in %.0f s", t.taskId, type(e).__name__, e, delay,
                              exc_info=not isinstance(e, errors.APIError))
            waiting = [t.taskId for t in work if retry.waiting(t.taskId)]
            if waiting and len(waiting) == len(work):
                time.sleep(min(retry.until_due(waiting), wait or 1))


def _reported(t, me):
    """True when this run of t has its report: one of me's, sent since the
    run started."""
    res, run = t.result or {}, t.run or {}
    return res.get("agentId") == me and res.get("completedAt", "") >= run.get("startedAt", "")
