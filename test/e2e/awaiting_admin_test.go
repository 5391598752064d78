package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

// TestAwaitingAdmin: while Claude Code's curl waits for the admins, the
// task is awaiting_admin, waiting for a tool_call over its in_progress
// turn, in `task list --status awaiting_admin` and `task show`; once
// denied it is the executor's turn again. Its final message has no
// report, which the timeline warns of.
func TestAwaitingAdmin(t *testing.T) {
	bash := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run it"}}
	}
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"claude", []fakemodel.Turn{
		{Text: "Checking the service.", Tool: bash("curl -s http://192.0.2.1/")},
		{Text: "Writing the file.", Tool: bash("printf 'hello\\n' > hello.txt && git add hello.txt && git -c user.name=c -c user.email=c@example.com commit -qm 'add hello.txt'")},
		{Text: "Done, hello.txt says hello."},
	}}})
	const id = "T-2026-871"
	s.planner.startTask(id, lowRiskPlan(s.repo))
	d := s.api.pending(id, task.KindToolCall, 3*time.Minute)

	eventually(t, 30*time.Second, id+" in task list --status awaiting_admin", func() (bool, error) {
		var list []workflows.TaskSummary
		out := mustCLI(t, s.p, opsToken, "task", "list", "--status", "awaiting_admin", "-o", "json")
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return false, fmt.Errorf("task list printed %q: %w", out, err)
		}
		return slices.ContainsFunc(list, func(l workflows.TaskSummary) bool { return l.TaskID == id && l.Status == task.StatusAwaitingAdmin }), fmt.Errorf("listed %+v", list)
	})
	var st task.State
	if err := json.Unmarshal([]byte(mustCLI(t, s.p, opsToken, "task", "show", id, "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != task.StatusAwaitingAdmin || st.WaitingFor != task.KindToolCall || st.UnderlyingStatus != task.StatusInProgress {
		t.Errorf("task show -o json: status %s, waiting_for %q, underlying_status %q; want awaiting_admin, tool_call, in_progress", st.Status, st.WaitingFor, st.UnderlyingStatus)
	}
	if out := mustCLI(t, s.p, opsToken, "task", "show", id); !strings.Contains(out, "awaiting_admin (waiting for tool_call; in_progress)") {
		t.Errorf("task show does not say what the task waits for:\n%s", out)
	}

	body := httpapi.DecideRequest{Option: task.OptDeny, Digest: d.Digest, Note: "no network here"}
	if code, resp := s.api.call("POST", "/v1/decisions/"+d.ID, body, nil); code != http.StatusOK {
		t.Fatalf("denying %s: %d %s", d.ID, code, resp)
	}
	st = s.api.awaitResult(id, 3*time.Minute)
	if st.WaitingFor == task.KindToolCall || st.UnderlyingStatus == task.StatusInProgress {
		t.Errorf("after the answer: status %s, waiting_for %q, underlying_status %q", st.Status, st.WaitingFor, st.UnderlyingStatus)
	}
	warned := slices.ContainsFunc(st.Timeline, func(e task.TimelineEntry) bool {
		return e.Kind == task.TimelineWarning && strings.Contains(e.Note, "criteria_met all null") && strings.Contains(e.Note, "no JSON object")
	})
	if !warned {
		t.Errorf("no warning of the unread report on the timeline: %+v", st.Timeline)
	}
}
