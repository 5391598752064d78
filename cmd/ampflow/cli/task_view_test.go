package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

func TestTaskList(t *testing.T) {
	list := []workflows.TaskSummary{
		{TaskID: "T-2026-002", Status: task.StatusInReview, Risk: "medium", Repo: "/src/a", RejectCount: 1, StartedAt: testNow, Running: true},
		{TaskID: "T-2026-001", Status: task.StatusDone, Risk: "low", Repo: "/src/b", StartedAt: testNow.Add(-time.Hour)},
	}
	t.Run("Text", func(t *testing.T) {
		f := &fakeTasks{list: list}
		r := runFake(t, f, "", nil, "task", "list", "--status", "in_review", "--limit", "5")
		wantExit(t, r, ExitOK)
		want := "TASK        STATUS     RISK    REJECTS  STARTED               REPO\n" +
			"T-2026-002  in_review  medium  1        2026-02-26 14:32:07Z  /src/a\n" +
			"T-2026-001  done       low     0        2026-02-26 13:32:07Z  /src/b\n"
		if r.stdout != want {
			t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
		}
		if f.Calls()[0] != `List "in_review" 5` {
			t.Errorf("calls = %q", f.Calls())
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{list: list}, "", nil, "task", "list", "-o", "json")
		wantExit(t, r, ExitOK)
		var got []workflows.TaskSummary
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 || got[0].TaskID != "T-2026-002" {
			t.Errorf("stdout %q: %v", r.stdout, err)
		}
	})
	t.Run("EmptyJSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", nil, "task", "list", "-o", "json")
		wantExit(t, r, ExitOK)
		if r.stdout != "[]\n" {
			t.Errorf("stdout = %q, want []", r.stdout)
		}
	})
	t.Run("BadStatus", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, "", nil, "task", "list", "--status", "finished")
		wantExit(t, r, ExitUsage)
		if !strings.Contains(r.stderr, `--status "finished": must be one of awaiting_approval,`) || len(f.Calls()) != 0 {
			t.Errorf("stderr %q, calls %q", r.stderr, f.Calls())
		}
	})
}

func shownState() task.State {
	st := approvalPending()
	st.Status = task.StatusLocked
	st.Risk, st.Repo, st.Branch, st.Description = amp.RiskHigh, "/src/a", "feature/x", "Do the thing"
	st.Subtasks = []amp.Subtask{{SubtaskID: "S1"}, {SubtaskID: "S2", Description: "Second"}, {SubtaskID: "S3"}}
	st.SubtaskIndex, st.Subtask = 1, &st.Subtasks[1]
	st.RejectCount, st.CIRounds = 3, 2
	st.LastError = "CI failed twice"
	st.Timeline = []task.TimelineEntry{
		{At: testNow, Kind: "message", MsgID: "task_dispatch-T-2026-003-1", Type: "task_dispatch", From: "coordinator", To: "executor"},
		{At: testNow.Add(time.Second), Kind: "status", Status: task.StatusLocked, Note: "3 rejects"},
	}
	return st
}

func TestTaskShow(t *testing.T) {
	t.Run("Text", func(t *testing.T) {
		r := runFake(t, &fakeTasks{states: []task.State{shownState()}}, "", nil, "task", "show", "T-2026-003")
		wantExit(t, r, ExitOK)
		for _, want := range []string{
			"Status       locked\n", "Risk         high\n", "Repo         /src/a @ feature/x\n",
			"Subtask      2/3 S2: Second\n", "Rejects      3\n", "CI rounds    2\n", "Last error   CI failed twice\n",
			"Pending decision plan_approval-1 (plan_approval)", "  - reject: ", "(needs --note)",
			"ampflow decide T-2026-003 --decision plan_approval-1 --option OPTION",
			"Timeline (2)\n", "2026-02-26 14:32:07Z  message  task_dispatch coordinator → executor task_dispatch-T-2026-003-1\n",
			"status   locked (3 rejects)\n",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
	})
	t.Run("Cost", func(t *testing.T) {
		st := shownState()
		st.CostUSD, st.Tokens = 0.0123, task.Tokens{Input: 1200, Output: 300}
		st.Spend = []task.Spend{{Role: amp.RoleExecutor, CostUSD: 0.01, CapUSD: 5}, {Role: amp.RoleReviewer, CostUSD: 0.0023}}
		st.PausedUntil = testNow.Add(time.Hour)
		r := runFake(t, &fakeTasks{states: []task.State{st}}, "", nil, "task", "show", "T-2026-003")
		wantExit(t, r, ExitOK)
		for _, want := range []string{
			"Cost         $0.0123 (1200 input, 300 output tokens; executor $0.0100 of a $5.00 cap, reviewer $0.0023)\n",
			"Paused       rate-limited; delivering again at 2026-02-26 15:32:07Z\n",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
		if r := runFake(t, &fakeTasks{states: []task.State{shownState()}}, "", nil, "task", "show", "T-2026-003"); strings.Contains(r.stdout, "Cost ") {
			t.Errorf("a task with no runner spend shows a cost:\n%s", r.stdout)
		}
	})
	t.Run("Recovering", func(t *testing.T) {
		st := shownState()
		st.Pending = nil
		st.Status, st.UnderlyingStatus = task.StatusRecovering, task.StatusInProgress
		st.Recovering = &task.Recovery{Role: amp.RoleExecutor, MsgID: "task_dispatch-T-2026-003-1", Session: "S-1", Since: testNow}
		r := runFake(t, &fakeTasks{states: []task.State{st}}, "", nil, "task", "show", "T-2026-003")
		wantExit(t, r, ExitOK)
		want := "Status       recovering (the executor's run on task_dispatch-T-2026-003-1 died at 14:32:07 and is delivered again; in_progress)\n"
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
		if got := describe(st); !strings.HasSuffix(got, "(recovering the executor's run on task_dispatch-T-2026-003-1)") || !strings.Contains(got, "recovering over in_progress") {
			t.Errorf("--wait's line %q", got)
		}
	})
	t.Run("AgentStderr", func(t *testing.T) {
		st := shownState()
		st.Pending.Kind = task.KindDeliveryFailed
		st.Pending.Context.AgentStderr = "Traceback (most recent call last):\nKeyError: 'task_id'"
		r := runFake(t, &fakeTasks{states: []task.State{st}}, "", nil, "task", "show", "T-2026-003")
		wantExit(t, r, ExitOK)
		if want := "  the agent's stderr ended with:\n    Traceback (most recent call last):\n    KeyError: 'task_id'\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{states: []task.State{shownState()}}, "", nil, "-o", "json", "task", "show", "T-2026-003")
		wantExit(t, r, ExitOK)
		var st task.State
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.TaskID != "T-2026-003" || st.Pending == nil || len(st.Timeline) != 2 {
			t.Errorf("stdout %q: %v", r.stdout, err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", nil, "task", "show", "T-2026-404")
		wantExit(t, r, ExitFailed)
		if r.stderr != "ampflow: reading task T-2026-404: no such task\n" {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
	t.Run("BadID", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", nil, "task", "show", "T-2026")
		wantExit(t, r, ExitUsage)
	})
}

// serveSSOT serves a short history of task T-2026-005 through the HTTP
// API and returns the API's URL.
func serveSSOT(t *testing.T) string {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := &activities.TaskRecord{Store: db}
	entries := []activities.RecordEntry{
		{ID: "task_dispatch-T-2026-005-1", Kind: ssot.KindMessage,
			Body: json.RawMessage(`{"type":"task_dispatch","from":"coordinator","to":"executor","payload":{}}`)},
		{ID: "ack-T-2026-005-2", Kind: ssot.KindAck,
			Body: json.RawMessage(`{"ack_of":"task_dispatch-T-2026-005-1","from":"executor"}`)},
		{ID: "escalation-T-2026-005-3", Kind: ssot.KindMessage,
			Body: json.RawMessage(`{"type":"escalation","from":"executor","to":"admin","payload":{"escalation_type":"scope_unclear","severity":"warning"}}`)},
		{ID: "d-1", Kind: ssot.KindDecision, Body: json.RawMessage(`{"kind":"agent_escalation","prompt":"Go on?"}`)},
		{ID: "d-1-outcome", Kind: ssot.KindDecision,
			Body: json.RawMessage(`{"kind":"agent_escalation","option":"resume","by":"ana","channel":"cli"}`)},
	}
	for i := range entries {
		entries[i].RecordedAt = testNow
	}
	if _, err := s.Record(context.Background(), activities.RecordInput{TaskID: "T-2026-005", Entries: entries}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Tasks: &fakeTasks{}, Store: db}).Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestTaskHistory(t *testing.T) {
	env := map[string]string{"AMPFLOW_API_URL": serveSSOT(t)}
	t.Run("Text", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "task", "history", "T-2026-005")
		wantExit(t, r, ExitOK)
		lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
		want := []string{
			"RECORDED", "task_dispatch coordinator → executor", "ack of task_dispatch-T-2026-005-1 by executor",
			"escalation executor → admin scope_unclear warning", "agent_escalation raised: Go on?",
			"agent_escalation decided resume by ana via cli",
		}
		if len(lines) != len(want) {
			t.Fatalf("stdout has %d lines, want %d:\n%s", len(lines), len(want), r.stdout)
		}
		for i, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d = %q, want it to contain %q", i, lines[i], w)
			}
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "-o", "json", "task", "history", "T-2026-005")
		wantExit(t, r, ExitOK)
		var recs []ssot.Record
		if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 5 || recs[1].Kind != string(ssot.KindAck) {
			t.Errorf("stdout %q: %v", r.stdout, err)
		}
	})
	t.Run("UnknownTask", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "task", "history", "T-2026-006")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "ampflow: no task T-2026-006 in the SSOT\n") {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
	t.Run("NoAPI", func(t *testing.T) {
		url := closedURL(t)
		r := runFake(t, &fakeTasks{}, "", map[string]string{"AMPFLOW_API_URL": url}, "task", "history", "T-2026-005")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "cannot reach the ampflow API at "+url+": is `ampflow dev` or `ampflow worker` running? set api.url / AMPFLOW_API_URL") {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
}

func TestMsgShow(t *testing.T) {
	env := map[string]string{"AMPFLOW_API_URL": serveSSOT(t)}
	t.Run("Text", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "msg", "show", "ack-T-2026-005-2")
		wantExit(t, r, ExitOK)
		for _, want := range []string{"ID        ack-T-2026-005-2\n", "Kind      ack\n", "Task      T-2026-005\n", "\"ack_of\": \"task_dispatch-T-2026-005-1\""} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "msg", "show", "d-1", "-o", "json")
		wantExit(t, r, ExitOK)
		var rec ssot.Record
		if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || rec.TaskID != "T-2026-005" || rec.Kind != string(ssot.KindDecision) {
			t.Errorf("stdout %q: %v", r.stdout, err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "msg", "show", "task_result-T-2026-005-9")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "ampflow: no record task_result-T-2026-005-9 in the SSOT\n") {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
}
