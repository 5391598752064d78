package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestACPPark parks Gemini CLI's run through the acp runner: with
// tools.ask_timeout at 2s, its permission request for a command the
// policy asks about is still open when the hook parks it, so the runner
// cancels the turn (the request answered "cancelled") and stops the
// agent, its session kept and no process left. The admin then approves
// over the API: the run loads the session (session/load) with the answer
// as its prompt (once the minute the session began has passed, which
// Gemini CLI needs), the agent makes the call again, the policy finds it
// allowed, it runs once, and the task gets its result.
func TestACPPark(t *testing.T) {
	const id = "T-2026-963"
	s := startRunnerDev(t, runnerOpts{tokens: true,
		executor: runner{"gemini", []fakemodel.Turn{
			{Text: "Checking the service.", Tool: geminiShell("echo ASK-ME >> parked.txt")},
			// The resumed run, told the call is allowed, makes it again.
			{Text: "Approved; running it again.", Tool: geminiShell("echo ASK-ME >> parked.txt")},
			geminiCommit("add parked.txt", "parked.txt"),
			{Text: "Done. " + acpReport},
		}},
		env: append(acpGemini(t, amp.RoleExecutor), acpRules, "AMPFLOW_TOOLS_ASK_TIMEOUT=2s"),
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ampflow dev:\n%s", s.p.output())
		}
	})
	ops := s.api
	s.planner.startTask(id, lowRiskPlan(s.repo))
	st := ops.waitFor(id, "the run parked on a tool_call decision", 3*time.Minute, func(st task.State) bool {
		return st.Pending != nil && st.Pending.Kind == task.KindToolCall && hasEvent(st, "parked") || st.Status.Terminal()
	})
	if st.Pending == nil || !hasEvent(st, "parked") {
		t.Fatalf("task %s: status %s (%s), not parked", id, st.Status, st.LastError)
	}
	d := *st.Pending
	eventually(t, 30*time.Second, "no process of the parked run", func() (bool, error) {
		ps := agentProcs(t, s.p.dataDir)
		return len(ps) == 0, fmt.Errorf("still running: %v", ps)
	})
	served := s.executor.Served()
	if served != 1 {
		t.Errorf("the model served %d turns before the answer, want the one that asked", served)
	}

	// The admin answers at once: the resumed run waits for the minute
	// Gemini CLI's session began to pass before it loads the session.
	ops.decide(d, task.OptAllowOnce)
	st = ops.awaitResult(id, 3*time.Minute)
	if got := git(t, s.repo, "show", "feature/e2e:parked.txt"); got != "ASK-ME" {
		t.Errorf("parked.txt on the branch = %q (status %s, %s): want the command run once", got, st.Status, st.LastError)
	}
	reqs := s.executor.AgentRequests()
	if len(reqs) < 2 || !reqs[1].Text("Checking the service.") || !reqs[1].Text("allowed your tool call") {
		t.Errorf("the resumed run's first request does not carry the conversation and the answer (%d requests)", len(reqs))
	}
	calls := agentCalls(ops, id)
	if len(calls) != 2 {
		t.Fatalf("%d tool calls, want the parked one (its retry finds it allowed) and the commit: %+v", len(calls), calls)
	}
	if c := calls[0]; c.Decision != task.ToolAllow || c.By != "ops" || c.Option != task.OptAllowOnce || !strings.Contains(c.Input, "parked.txt") {
		t.Errorf("the parked call: %+v", c)
	}
	if ps := agentProcs(t, s.p.dataDir); len(ps) != 0 {
		t.Errorf("processes left after the result: %v", ps)
	}
}

// hasEvent reports whether the task's timeline has an event of kind.
func hasEvent(st task.State, kind string) bool {
	for _, e := range st.Timeline {
		if string(e.Kind) == kind {
			return true
		}
	}
	return false
}

// TestACPWatchdog: Gemini CLI through the acp runner waits on a model
// that never answers; past agents.executor.idle_timeout the runner sends
// session/cancel and stops the agent. No process of the run is left, and
// the task says why its delivery failed.
func TestACPWatchdog(t *testing.T) {
	const id = "T-2026-964"
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"gemini", []fakemodel.Turn{{Hang: true}}},
		env:      append(acpGemini(t, amp.RoleExecutor), "AMPFLOW_AGENTS_EXECUTOR_IDLE_TIMEOUT=15s", "AMPFLOW_TOOLS_ASK_TIMEOUT=10s"),
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ampflow dev:\n%s", s.p.output())
		}
	})
	s.planner.startTask(id, lowRiskPlan(s.repo))
	st := s.api.waitFor(id, "the hung run's failed delivery", 3*time.Minute, func(st task.State) bool {
		return strings.Contains(st.LastError, "idle_timeout") || st.Status.Terminal()
	})
	if !strings.Contains(st.LastError, "printed no event for agents.*.idle_timeout") {
		t.Fatalf("task %s: status %s, last error %q: want the idle watchdog's", id, st.Status, st.LastError)
	}
	eventually(t, 30*time.Second, "no process of the stopped run", func() (bool, error) {
		ps := agentProcs(t, s.p.dataDir)
		return len(ps) == 0, fmt.Errorf("still running: %v", ps)
	})
	if reqs := s.executor.AgentRequests(); len(reqs) != 1 {
		t.Errorf("the model got %d agent requests, want the one it never answered", len(reqs))
	}
}
