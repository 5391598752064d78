package cli

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

func approvalPending() task.State {
	return task.State{Status: task.StatusAwaitingApproval, Pending: &decision.Decision{
		ID: "plan_approval-1", Subject: "T-2026-003", Kind: task.KindPlanApproval, Prompt: "Approve the plan?", Digest: strings.Repeat("a1", 32),
		Options: []decision.Option{{ID: "approve"}, {ID: "reject", NoteRequired: true}},
	}}
}

func TestTaskStart(t *testing.T) {
	t.Run("FromYAML", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-007", states: []task.State{{Status: task.StatusAwaitingApproval}, approvalPending()}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml")
		wantExit(t, r, ExitOK)
		if got := lastLine(r.stdout); got != "T-2026-007" {
			t.Errorf("last stdout line = %q, want the task id alone", got)
		}
		if !strings.Contains(r.stdout, "waiting for an admin: Approve the plan?") {
			t.Errorf("stdout does not show the pending approval: %q", r.stdout)
		}
		if calls := f.Calls(); calls[0] != "StartNext 2026" {
			t.Errorf("calls = %q, want StartNext with the current year first", calls)
		}
		in := f.started[0]
		if in.Plan.Branch != "feature/watch-breath-v2" || len(in.Plan.Subtasks) != 2 || in.Plan.Subtasks[1].EstimatedLines != 30 ||
			in.Plan.TechConstraints["swift_version"] != "6.0" {
			t.Errorf("plan = %+v, not the YAML file's", in.Plan)
		}
		// The worker's configuration is the task's policy, not the CLI's.
		if in.Policy.MaxRejects != 0 || len(in.Policy.Admins) != 0 || in.Coordinator != "" {
			t.Errorf("input = %+v, want no policy of the CLI's and the coordinator left to the API", in)
		}
	})
	t.Run("FromJSONWithID", func(t *testing.T) {
		f := &fakeTasks{states: []task.State{{Status: task.StatusDispatched}}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.json", "--task-id", "T-2026-045", "--handling", "admin")
		wantExit(t, r, ExitOK)
		if r.stdout != "task T-2026-045 started: dispatched\nT-2026-045\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
		if f.Calls()[0] != "Start T-2026-045" || f.started[0].Handling != task.HandlingAdmin || f.started[0].Plan.RiskLevel != "medium" {
			t.Errorf("calls %q, input %+v", f.Calls(), f.started[0])
		}
	})
	t.Run("SaysThePlansHandling", func(t *testing.T) {
		for _, c := range []struct {
			name string
			st   task.State
			want string
		}{
			{"Auto", task.State{TaskID: "T-2026-046", Status: task.StatusDispatched, Risk: amp.RiskLow, PlanApproval: task.HandlingAuto,
				Timeline: []task.TimelineEntry{{Kind: "decision"}}}, "task T-2026-046 started; plan approved automatically: low risk\n"},
			{"Admin", func() task.State {
				st := approvalPending()
				st.TaskID, st.Risk, st.PlanApproval = "T-2026-046", amp.RiskHigh, task.HandlingAdmin
				return st
			}(), "task T-2026-046 started; plan waits for an admin: high risk: Approve the plan?\n"},
		} {
			t.Run(c.name, func(t *testing.T) {
				f := &fakeTasks{states: []task.State{c.st}}
				r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.json", "--task-id", "T-2026-046")
				wantExit(t, r, ExitOK)
				if !strings.HasPrefix(r.stdout, c.want) {
					t.Errorf("stdout = %q, want it to start %q", r.stdout, c.want)
				}
				r = runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.json", "--task-id", "T-2026-046", "-o", "json")
				if !strings.Contains(r.stdout, `"plan_approval":"`+string(c.st.PlanApproval)+`"`) {
					t.Errorf("json = %q", r.stdout)
				}
			})
		}
	})
	t.Run("FromStdinJSONOutput", func(t *testing.T) {
		plan, err := os.ReadFile("testdata/plan.json")
		if err != nil {
			t.Fatal(err)
		}
		f := &fakeTasks{nextID: "T-2026-008", states: []task.State{approvalPending()}}
		r := runFake(t, f, string(plan), nil, "-o", "json", "task", "start", "-f", "-")
		wantExit(t, r, ExitOK)
		var out startOutput
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("stdout is not one JSON object: %v: %q", err, r.stdout)
		}
		if out.TaskID != "T-2026-008" || out.Pending == nil || out.Pending.ID != "plan_approval-1" || !out.Checked {
			t.Errorf("output = %+v", out)
		}
	})
	t.Run("InvalidPlan", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan_invalid.yaml")
		wantExit(t, r, ExitFailed)
		for _, want := range []string{"plan.branch: must not be main", "plan.acceptance_criteria:", "plan.risk_level:", "plan.subtasks[0].estimated_lines:"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q: %q", want, r.stderr)
			}
		}
		if strings.Count(r.stderr, "\n") != 1 || len(f.Calls()) != 0 {
			t.Errorf("stderr %q, calls %q; want one line and nothing sent", r.stderr, f.Calls())
		}
	})
	t.Run("MalformedJSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, `{"description": "x",}`, nil, "task", "start", "-f", "-")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "plan: malformed JSON at byte offset") {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-009", states: []task.State{{Status: task.StatusTerminated,
			Reason: "refused: branch feature/watch-breath-v2 does not exist in /src/rhylm"}}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml")
		wantExit(t, r, ExitFailed)
		if r.stderr != "ampflow: task T-2026-009 terminated: refused: branch feature/watch-breath-v2 does not exist in /src/rhylm\n" {
			t.Errorf("stderr = %q", r.stderr)
		}
		if lastLine(r.stdout) != "T-2026-009" {
			t.Errorf("stdout = %q, want the task id last", r.stdout)
		}
	})
	t.Run("IDTaken", func(t *testing.T) {
		f := &fakeTasks{startErr: task.Errorf(task.CodeConflict, "task id T-2026-045 is taken")}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml", "--task-id", "T-2026-045")
		wantExit(t, r, ExitFailed)
		if r.stderr != "ampflow: task id T-2026-045 is taken\n" || r.stdout != "" {
			t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
		}
	})
	t.Run("CheckNotFinished", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-010", states: []task.State{{Status: task.StatusAwaitingApproval}}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml")
		wantExit(t, r, ExitOK)
		if !strings.Contains(r.stderr, "did not finish within") || lastLine(r.stdout) != "T-2026-010" {
			t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
		}
	})
}

func TestTaskStartWait(t *testing.T) {
	running := func(s task.Status, i int) task.State {
		return task.State{Status: s, Subtasks: make([]amp.Subtask, 2), SubtaskIndex: i, Subtask: &amp.Subtask{SubtaskID: "S"},
			Timeline: []task.TimelineEntry{{Kind: "decision"}}}
	}
	t.Run("Done", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-011", states: []task.State{
			running(task.StatusDispatched, 0), running(task.StatusInProgress, 0), running(task.StatusInProgress, 0),
			running(task.StatusInReview, 0), running(task.StatusDispatched, 1), {Status: task.StatusDone},
		}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml", "--wait")
		wantExit(t, r, ExitOK)
		want := "task T-2026-011 started: dispatched\n" +
			"T-2026-011 in_progress subtask 1/2\n" +
			"T-2026-011 in_review subtask 1/2\n" +
			"T-2026-011 dispatched subtask 2/2\n" +
			"T-2026-011 done\n" +
			"T-2026-011\n"
		if r.stdout != want {
			t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
		}
		if strings.Contains(r.stdout, "\r") {
			t.Error("a spinner was drawn on a non-terminal")
		}
	})
	t.Run("Terminated", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-012", states: []task.State{
			running(task.StatusDispatched, 0), {Status: task.StatusTerminated, Reason: "terminated by bo via slack: wrong repo"},
		}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml", "--wait")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "terminated by bo via slack: wrong repo") || lastLine(r.stdout) != "T-2026-012" {
			t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
		}
	})
	t.Run("TimedOut", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-013", states: []task.State{running(task.StatusInProgress, 0)}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml", "--wait", "--wait-timeout", "20ms")
		wantExit(t, r, ExitFailed)
		if !strings.Contains(r.stderr, "task T-2026-013 is still in_progress after --wait-timeout 20ms") {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
}

func TestProgressSpinner(t *testing.T) {
	var b strings.Builder
	p := &progress{w: &b, terminal: true}
	st := task.State{TaskID: "T-2026-001", Status: task.StatusInReview}
	p.show(st)
	p.show(st)
	p.end()
	out := b.String()
	if strings.Count(out, "\r\033[K") != 3 || strings.Count(out, "T-2026-001 in_review") != 2 || strings.Contains(out, "\n") {
		t.Errorf("spinner output = %q, want two redrawn lines and a clear, no newline", out)
	}
}

func TestTaskStartUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"NoFile", []string{"task", "start"}, "start needs -f FILE"},
		{"BadHandling", []string{"task", "start", "-f", "testdata/plan.yaml", "--handling", "loose"}, `--handling "loose"`},
		{"BadTaskID", []string{"task", "start", "-f", "testdata/plan.yaml", "--task-id", "T-26-1"}, `--task-id "T-26-1"`},
		{"Unreadable", []string{"task", "start", "-f", "testdata/nope.yaml"}, "nope.yaml"},
		{"NoSubcommand", []string{"task"}, "task needs a subcommand"},
		{"UnknownSubcommand", []string{"task", "strat"}, `unknown task subcommand "strat"; did you mean start?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTasks{}
			r := runFake(t, f, "", nil, tt.args...)
			wantExit(t, r, ExitUsage)
			if !strings.Contains(r.stderr, tt.want) || !slices.Equal(f.Calls(), nil) {
				t.Errorf("stderr %q (want %q), calls %q", r.stderr, tt.want, f.Calls())
			}
		})
	}
}

func TestTaskStartIdempotencyKey(t *testing.T) {
	// The key goes to the API as it is; the API scopes it to its caller.
	t.Run("Sent", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-020", states: []task.State{{Status: task.StatusDispatched}}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml", "--idempotency-key", "plan-7")
		wantExit(t, r, ExitOK)
		if len(f.started) != 1 || len(f.keys) != 1 || f.keys[0] != "plan-7" {
			t.Errorf("started %+v with keys %q; want plan-7", f.started, f.keys)
		}
	})
	t.Run("NoKey", func(t *testing.T) {
		f := &fakeTasks{nextID: "T-2026-021", states: []task.State{{Status: task.StatusDispatched}}}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml")
		wantExit(t, r, ExitOK)
		if len(f.started) != 1 || f.keys[0] != "" {
			t.Errorf("started %+v with keys %q; want no key", f.started, f.keys)
		}
	})
	t.Run("BadKey", func(t *testing.T) {
		f := &fakeTasks{}
		r := runFake(t, f, "", nil, "task", "start", "-f", "testdata/plan.yaml", "--idempotency-key", "two words")
		wantExit(t, r, ExitUsage)
		if !strings.Contains(r.stderr, "--idempotency-key") || len(f.Calls()) != 0 {
			t.Errorf("stderr %q, calls %v", r.stderr, f.Calls())
		}
	})
}
