package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// digestA and digestB are two digests of one decision, before and after
// what it asks changed.
var (
	digestA = strings.Repeat("a1", 32)
	digestB = strings.Repeat("b2", 32)
)

func TestPending(t *testing.T) {
	ds := []decision.Decision{
		{ID: "d-7", Subject: "T-2026-002", Kind: task.KindFinalApproval, Prompt: "Merge the work?",
			Options: []decision.Option{{ID: "approve"}, {ID: "reject", NoteRequired: true}},
			Digest:  digestA, ExpiresAt: testNow.Add(23*time.Hour + 5*time.Minute), Required: 2,
			Approvals: []decision.Approval{{By: "ops", Channel: "slack", At: testNow}}},
		{ID: "d-9", Subject: "T-2026-004", Kind: task.KindAckTimeout, Prompt: "No ACK from the executor.",
			Options: []decision.Option{{ID: "wait"}, {ID: "redispatch"}}, Digest: digestB},
	}
	t.Run("Text", func(t *testing.T) {
		r := runFake(t, &fakeTasks{pending: ds}, "", nil, "pending")
		wantExit(t, r, ExitOK)
		want := "SUBJECT     DECISION  KIND            APPROVALS  EXPIRES    DIGEST        PROMPT                     OPTIONS\n" +
			"T-2026-002  d-7       final_approval  1 of 2     in 23h05m  a1a1a1a1a1a…  Merge the work?            approve, reject*\n" +
			"T-2026-004  d-9       ack_timeout     0 of 1     never      b2b2b2b2b2b…  No ACK from the executor.  wait, redispatch\n" +
			"* needs --note\n"
		if r.stdout != want {
			t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{pending: ds}, "", nil, "pending", "-o", "json")
		wantExit(t, r, ExitOK)
		var got []decision.Decision
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 || !got[0].Options[1].NoteRequired ||
			got[0].Digest != digestA || got[0].Required != 2 || len(got[0].Approvals) != 1 || !got[0].ExpiresAt.Equal(ds[0].ExpiresAt) {
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
		if len(f.decided) != 1 || f.decided[0] != (decision.Answer{DecisionID: "plan_approval-1", Option: "approve", Digest: digestA, Channel: "cli"}) {
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
		{"StaleDigest", pending, []string{"--digest", digestB, "--option", "approve"},
			"digest: decision plan_approval-1 (plan_approval of T-2026-003) has changed since it was read: its digest is now a1a1a1a1a1a…, not b2b2b2b2b2b…; nothing was decided"},
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
	t.Run("PinnedDigest", func(t *testing.T) {
		f := &fakeTasks{states: pending}
		r := runFake(t, f, "", nil, "decide", "T-2026-003", "--digest", strings.ToUpper(digestA), "--option", "approve")
		wantExit(t, r, ExitOK)
		if len(f.decided) != 1 || f.decided[0].Digest != digestA {
			t.Errorf("decided %+v, want the digest %s", f.decided, digestA)
		}
	})
	t.Run("StaleDigestJSON", func(t *testing.T) {
		f := &fakeTasks{states: pending}
		r := runFake(t, f, "", nil, "-o", "json", "decide", "T-2026-003", "--digest", digestB, "--option", "approve")
		wantExit(t, r, ExitFailed)
		var e errorJSON
		if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || e.Error.Code != task.CodeStaleDecision || len(f.decided) != 0 {
			t.Errorf("stderr %q (%v), decided %+v; want code stale_decision and nothing decided", r.stderr, err, f.decided)
		}
	})
	t.Run("BadDigest", func(t *testing.T) {
		r := runFake(t, &fakeTasks{states: pending}, "", nil, "decide", "T-2026-003", "--digest", "a1a1", "--option", "approve")
		wantExit(t, r, ExitUsage)
		if !strings.Contains(r.stderr, "--digest") {
			t.Errorf("stderr %q, want it to name --digest", r.stderr)
		}
	})
	// Without a task, --decision names any open decision; the answer
	// goes to its subject.
	t.Run("ByDecisionID", func(t *testing.T) {
		d := *approvalPending().Pending
		d.ID, d.Subject = "G-7f3a-d2", "G-7f3a"
		f := &fakeTasks{pending: []decision.Decision{d}}
		r := runFake(t, f, "", nil, "decide", "--decision", "G-7f3a-d2", "--digest", digestA, "--option", "approve")
		wantExit(t, r, ExitOK)
		if calls := f.Calls(); calls[len(calls)-1] != "Decide G-7f3a" || f.decided[0].Digest != digestA {
			t.Errorf("calls %v, decided %+v", calls, f.decided)
		}
		r = runFake(t, f, "", nil, "decide", "--decision", "G-7f3a-d9", "--option", "approve")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "G-7f3a-d9 is not open") {
			t.Errorf("stderr %q", r.stderr)
		}
		r = runFake(t, f, "", nil, "decide", "--option", "approve")
		wantExit(t, r, ExitUsage)
	})
	// A gate's (or any non-task) subject as the argument is told to
	// use --decision, with the id of its open decision.
	t.Run("GateSubjectSuggestsDecision", func(t *testing.T) {
		d := *approvalPending().Pending
		d.ID, d.Subject = "gate_3f2a-d1", "gate_3f2a"
		f := &fakeTasks{pending: []decision.Decision{d}}
		r := runFake(t, f, "", nil, "decide", "gate_3f2a", "--option", "approve")
		wantExit(t, r, ExitUsage)
		if !strings.Contains(r.stderr, "ampflow decide --decision gate_3f2a-d1 --option approve") || len(f.decided) != 0 {
			t.Errorf("stderr %q, decided %+v", r.stderr, f.decided)
		}
		r = runFake(t, f, "", nil, "decide", "gate_ffff", "--option", "approve")
		wantExit(t, r, ExitUsage)
		if !strings.Contains(r.stderr, "--decision ID") || !strings.Contains(r.stderr, "ampflow pending") {
			t.Errorf("stderr %q", r.stderr)
		}
	})
	// The workflow's refusals read as they came, with exit 1.
	for _, code := range []task.Code{task.CodeStaleDecision, task.CodeDecided} {
		t.Run("Refused_"+string(code), func(t *testing.T) {
			msg := "decision plan_approval-1 already decided by ops via slack at 2026-02-26T14:00:00Z (approve)"
			f := &fakeTasks{states: pending, decErr: &task.Error{Code: code, Message: msg}}
			r := runFake(t, f, "", nil, "decide", "T-2026-003", "--option", "approve")
			wantExit(t, r, ExitFailed)
			if r.stderr != "ampflow: "+msg+"\n" {
				t.Errorf("stderr = %q", r.stderr)
			}
		})
	}
	t.Run("QuorumOpen", func(t *testing.T) {
		d := *approvalPending().Pending
		d.Required = 2
		d.Approvals = []decision.Approval{{By: "ana", Channel: "cli", At: testNow}}
		p := d.Progress()
		f := &fakeTasks{states: pending, decRes: &task.DecideResult{Decision: &d, Progress: &p, Status: task.StatusAwaitingApproval}}
		r := runFake(t, f, "", nil, "decide", "T-2026-003", "--option", "approve")
		wantExit(t, r, ExitOK)
		if want := "approval counted on plan_approval-1 (plan_approval) of T-2026-003: 1 of 2 approvals: ana; still open; status awaiting_approval\n"; r.stdout != want {
			t.Errorf("stdout = %q, want %q", r.stdout, want)
		}
	})
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

// TestPendingToolCall: under the table, a tool_call decision shows the
// command it asks about, its directory, rule, the rule's risk and quorum, with the agent's
// control characters escaped.
func TestPendingToolCall(t *testing.T) {
	d := decision.Decision{ID: "T-2026-045-d3", Subject: "T-2026-045", Kind: task.KindToolCall, Prompt: "exec wants to run Bash",
		Options: []decision.Option{{ID: task.OptAllowOnce}, {ID: task.OptAllowTool}, {ID: task.OptDeny, NoteRequired: true}},
		Digest:  digestA, Required: 2,
		Context: decision.Context{Extra: map[string]any{"tool": "Bash", "kind": "shell", "agent": "exec", "cwd": "/wt/T-2026-045",
			"rule": "ask-network", "reason": "ask before network", "risk": "high", "input": "{\"command\":\"curl -s http://x/ \\u001b[2J\\necho done\"}"}}}
	r := runFake(t, &fakeTasks{pending: []decision.Decision{d}}, "", nil, "pending")
	wantExit(t, r, ExitOK)
	want := "\nT-2026-045-d3 (T-2026-045): exec wants to run Bash (shell) in /wt/T-2026-045\n" +
		"  rule ask-network: ask before network; risk high; quorum 2 admins; --option allow_once, allow_tool or deny (with --note)\n" +
		"  | $ curl -s http://x/ \\x1b[2J\n" +
		"  | echo done\n"
	if !strings.HasSuffix(r.stdout, want) {
		t.Errorf("stdout =\n%s\nwant it to end with\n%s", r.stdout, want)
	}
}
