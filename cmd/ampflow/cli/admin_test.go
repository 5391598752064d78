package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

func TestPending(t *testing.T) {
	ds := []decision.Decision{
		{ID: "d-7", Subject: "T-2026-002", Kind: task.KindFinalApproval, Prompt: "Merge the work?",
			Options: []decision.Option{{ID: "approve"}, {ID: "reject", NoteRequired: true}}},
		{ID: "d-9", Subject: "T-2026-004", Kind: task.KindAckTimeout, Prompt: "No ACK from the executor.",
			Options: []decision.Option{{ID: "wait"}, {ID: "redispatch"}}},
	}
	t.Run("Text", func(t *testing.T) {
		r := runFake(t, &fakeTasks{pending: ds}, "", nil, "pending")
		wantExit(t, r, ExitOK)
		want := "TASK        DECISION  KIND            PROMPT                     OPTIONS\n" +
			"T-2026-002  d-7       final_approval  Merge the work?            approve, reject*\n" +
			"T-2026-004  d-9       ack_timeout     No ACK from the executor.  wait, redispatch\n" +
			"* needs --note\n"
		if r.stdout != want {
			t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{pending: ds}, "", nil, "pending", "-o", "json")
		wantExit(t, r, ExitOK)
		var got []decision.Decision
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 || !got[0].Options[1].NoteRequired {
			t.Errorf("stdout %q: %v", r.stdout, err)
		}
	})
	t.Run("EmptyJSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", nil, "pending", "-o", "json")
		if r.stdout != "[]\n" {
			t.Errorf("stdout = %q, want []", r.stdout)
		}
	})
}

func TestDecide(t *testing.T) {
	pending := []task.State{approvalPending()}
	t.Run("CurrentDecision", func(t *testing.T) {
		f := &fakeTasks{states: pending}
		r := runFake(t, f, "", nil, "decide", "T-2026-003", "--option", "approve")
		wantExit(t, r, ExitOK)
		if len(f.decided) != 1 || f.decided[0] != (decision.Answer{DecisionID: "plan_approval-1", Option: "approve", Channel: "cli"}) {
			t.Errorf("decided %+v", f.decided)
		}
		if r.stdout != "decided plan_approval-1 (plan_approval) on T-2026-003: approve by ana; status dispatched\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
	})
	t.Run("MatchingDecisionWithNote", func(t *testing.T) {
		f := &fakeTasks{states: pending}
		r := runFake(t, f, "", nil, "decide", "T-2026-003", "--decision", "plan_approval-1", "--option", "reject",
			"--note", "too broad", "-o", "json")
		wantExit(t, r, ExitOK)
		var res task.DecideResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Outcome.By != "ana" || f.decided[0].Note != "too broad" {
			t.Errorf("stdout %q (%v), decided %+v", r.stdout, err, f.decided)
		}
	})
	refusals := []struct {
		name   string
		states []task.State
		args   []string
		want   string
	}{
		{"StaleDecision", pending, []string{"--decision", "plan_approval-0", "--option", "approve"},
			"decision: plan_approval-0 is not the pending decision of task T-2026-003; pending now is plan_approval-1"},
		{"UnknownOption", pending, []string{"--option", "skip_ci"}, `option: "skip_ci" is not an option of decision plan_approval-1; choose approve, reject`},
		{"NoteMissing", pending, []string{"--option", "reject"}, "note: option reject of decision plan_approval-1 needs --note"},
		{"NothingPending", []task.State{{Status: task.StatusInProgress}}, []string{"--option", "approve"}, "task T-2026-003 has no pending decision (status in_progress)"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTasks{states: tt.states}
			r := runFake(t, f, "", nil, append([]string{"decide", "T-2026-003"}, tt.args...)...)
			wantExit(t, r, ExitFailed)
			if !strings.Contains(r.stderr, tt.want) || len(f.decided) != 0 {
				t.Errorf("stderr %q (want %q), decided %+v", r.stderr, tt.want, f.decided)
			}
		})
	}
	t.Run("RefusedByTask", func(t *testing.T) {
		f := &fakeTasks{states: pending, decErr: &task.Error{Code: task.CodeForbidden, Message: `by: "ana" is not a configured admin`}}
		r := runFake(t, f, "", nil, "decide", "T-2026-003", "--option", "approve")
		wantExit(t, r, ExitFailed)
		if r.stderr != "ampflow: by: \"ana\" is not a configured admin\n" {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
	// The decider is the API's caller, the token's name: no flag names
	// another.
	t.Run("NoByFlag", func(t *testing.T) {
		f := &fakeTasks{states: pending}
		r := runFake(t, f, "", nil, "decide", "T-2026-003", "--option", "approve", "--by", "mallory")
		wantExit(t, r, ExitUsage)
		if !strings.Contains(r.stderr, "unknown flag: --by") || len(f.decided) != 0 {
			t.Errorf("stderr %q, decided %+v", r.stderr, f.decided)
		}
	})
	t.Run("NoOption", func(t *testing.T) {
		r := runFake(t, &fakeTasks{states: pending}, "", nil, "decide", "T-2026-003")
		wantExit(t, r, ExitUsage)
	})
}
