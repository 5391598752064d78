package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// testClock is a clock that moves 10ms a reading.
func testClock() func() time.Time {
	t := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(10 * time.Millisecond)
		return t
	}
}

func options(t *testing.T, f *fakeTasks, out *bytes.Buffer) Options {
	return Options{Tasks: f, Out: out, Poll: time.Millisecond, Now: testClock(), RepoDir: filepath.Join(t.TempDir(), "repo")}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func TestRunPlaysTheWholeLoop(t *testing.T) {
	f := newFake(t)
	f.early = 1
	var out bytes.Buffer
	o := options(t, f, &out)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sum, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if len(f.problems) > 0 {
		t.Errorf("the fake workflow found problems:\n%s", strings.Join(f.problems, "\n"))
	}

	want := []string{
		"StartNext",
		"Ack task_dispatch executor", "Submit task_result",
		"Ack review_request reviewer", "Submit review_verdict rejected", "Submit review_verdict rejected",
		"Ack task_dispatch executor", "Submit task_result",
		"Ack review_request reviewer", "Submit review_verdict approved",
	}
	if !slices.Equal(f.calls, want) {
		t.Errorf("calls:\n got %q\nwant %q", f.calls, want)
	}

	if sum.TaskID != "T-2026-007" || sum.Status != task.StatusDone || sum.Rounds != 2 || sum.RejectCount != 1 {
		t.Errorf("summary = %+v", sum)
	}
	var wantIDs []string
	for _, e := range f.timeline {
		if e.Kind == "message" {
			wantIDs = append(wantIDs, e.MsgID)
		}
	}
	if len(sum.MsgIDs) != 8 || !slices.Equal(sum.MsgIDs, wantIDs) {
		t.Errorf("msg ids = %q, want the 8 of the timeline %q", sum.MsgIDs, wantIDs)
	}

	repo := f.in.Plan.Repo
	if got := gitOut(t, repo, "branch", "--show-current"); got != FeatureBranch {
		t.Errorf("checked out %q, want %s", got, FeatureBranch)
	}
	if got := gitOut(t, repo, "rev-list", "--count", "main"); got != "1" {
		t.Errorf("main has %s commits, want the initial one only", got)
	}
	if len(f.results) != 2 {
		t.Fatalf("%d results, want 2", len(f.results))
	}
	if head := gitOut(t, repo, "rev-parse", FeatureBranch); f.results[1].CommitHash != head {
		t.Errorf("second result's commit %s, branch head %s", f.results[1].CommitHash, head)
	}
	for i, wantDiff := range []amp.DiffSummary{
		{FilesChanged: []string{"hello.sh"}, LinesAdded: 2},
		{FilesChanged: []string{"hello.sh"}, LinesAdded: 3},
	} {
		if got := f.results[i].DiffSummary; !slices.Equal(got.FilesChanged, wantDiff.FilesChanged) ||
			got.LinesAdded != wantDiff.LinesAdded || got.LinesRemoved != wantDiff.LinesRemoved {
			t.Errorf("result %d diff_summary = %+v, want %+v", i+1, got, wantDiff)
		}
	}
	script, err := os.ReadFile(filepath.Join(repo, "hello.sh"))
	if err != nil || string(script) != fixedScript {
		t.Errorf("hello.sh = %q, %v; want the fixed script", script, err)
	}

	if len(f.dispatches) != 2 || !strings.Contains(f.dispatches[1].Dispatch().Description, reviewIssue.Description) {
		t.Fatalf("the second dispatch does not carry the reviewer's issue: %+v", f.dispatches)
	}
	text := out.String()
	for _, s := range []string{
		"coordinator started T-2026-007",
		"coordinator plan approved (automatically, as the policy has it for low risk)",
		"executor    ACK " + f.dispatches[0].MsgID,
		"executor    ACK " + f.dispatches[1].MsgID,
		"| - [critical] hello.sh:2 " + reviewIssue.Description,
		"send review_verdict",
		"coordinator done",
		"T-2026-007 done: 2 rounds, reject_count 1",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "waiting for") {
		t.Errorf("the demo says it waits for an approval the policy gave:\n%s", text)
	}
	if strings.Contains(text, f.foreign[0].MsgID) {
		t.Errorf("the demo touched another task's message %s:\n%s", f.foreign[0].MsgID, text)
	}
}

func TestRunJSON(t *testing.T) {
	f := newFake(t)
	var out bytes.Buffer
	o := options(t, f, &out)
	o.JSON = true
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var steps []map[string]any
	if err := json.Unmarshal(out.Bytes(), &steps); err != nil {
		t.Fatalf("output is not one JSON array: %v\n%s", err, out.String())
	}
	if len(steps) != len(sum.Steps) || len(steps) < 10 {
		t.Fatalf("%d steps in JSON, %d in the summary", len(steps), len(sum.Steps))
	}
	var roles []string
	for i, s := range steps {
		var keys []string
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"action", "at", "msg_id", "role", "status"}) {
			t.Errorf("step %d has keys %v", i, keys)
		}
		if _, err := time.Parse(time.RFC3339Nano, s["at"].(string)); err != nil {
			t.Errorf("step %d at: %v", i, err)
		}
		roles = append(roles, s["role"].(string))
	}
	if first := steps[0]; first["role"] != "coordinator" || first["action"] != "started T-2026-007" {
		t.Errorf("first step = %v", first)
	}
	if last := steps[len(steps)-1]; last["action"] != "done" || last["status"] != "done" {
		t.Errorf("last step = %v", last)
	}
	if !slices.Contains(roles, "executor") || !slices.Contains(roles, "reviewer") {
		t.Errorf("roles = %v", roles)
	}
	for _, s := range steps {
		if s["action"] == "ACK" && s["msg_id"] == "" {
			t.Errorf("ACK step without msg_id: %v", s)
		}
	}
}

func TestRunTimeout(t *testing.T) {
	f := newFake(t)
	f.stall = true
	var out bytes.Buffer
	// Long enough for the git steps before the stall on a loaded machine;
	// the stall itself waits for the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Run(ctx, options(t, f, &out))
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *TimeoutError", err)
	}
	if !strings.Contains(te.Step, "review_request") || te.Status != task.StatusCICheck || te.TaskID != "T-2026-007" {
		t.Errorf("timeout = %+v", te)
	}
	for _, s := range []string{"timed out waiting for the review_request", "ci_check", "ci.provider none"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

func TestRunTaskEnded(t *testing.T) {
	f := newFake(t)
	f.refuse = "refused: branch \"feature/demo\" not found"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Run(ctx, options(t, f, &bytes.Buffer{}))
	var te *TimeoutError
	if err == nil || errors.As(err, &te) || !errors.Is(err, errEnded) {
		t.Fatalf("err = %v, want the task's early end", err)
	}
	if !strings.Contains(err.Error(), f.refuse) || !strings.Contains(err.Error(), "task_dispatch") {
		t.Errorf("error %q does not say which step and why", err)
	}
}

func TestRunRefusesAUsedRepoDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFake(t)
	_, err := Run(context.Background(), Options{Tasks: f, RepoDir: dir})
	if err == nil || !strings.Contains(err.Error(), "must be an empty directory") {
		t.Fatalf("err = %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("calls = %v, want none", f.calls)
	}
}

func TestParseNumstat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want amp.DiffSummary
		bad  bool
	}{
		{"Empty", "", amp.DiffSummary{FilesChanged: []string{}}, false},
		{"Two", "2\t0\thello.sh\x001\t3\tdir/a b.txt\x00", amp.DiffSummary{FilesChanged: []string{"hello.sh", "dir/a b.txt"}, LinesAdded: 3, LinesRemoved: 3}, false},
		{"Binary", "-\t-\tlogo.png\x00", amp.DiffSummary{FilesChanged: []string{"logo.png"}}, false},
		{"Garbled", "x\ty\tz\x00", amp.DiffSummary{}, true},
		{"Short", "1\t2\x00", amp.DiffSummary{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseNumstat(tt.in)
			if (err != nil) != tt.bad {
				t.Fatalf("err = %v, want error %v", err, tt.bad)
			}
			if tt.bad {
				return
			}
			if !slices.Equal(got.FilesChanged, tt.want.FilesChanged) || got.LinesAdded != tt.want.LinesAdded || got.LinesRemoved != tt.want.LinesRemoved {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRunTimeoutAtStart(t *testing.T) {
	f := newFake(t)
	f.block = true
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, options(t, f, &bytes.Buffer{}))
	var te *TimeoutError
	if !errors.As(err, &te) || te.Step != "the demo task to start" || te.Err == nil {
		t.Fatalf("err = %#v, want a timeout of the start", err)
	}
}

func TestHint(t *testing.T) {
	tests := []struct {
		name string
		st   task.State
		step string
		want string
		// dashboard is the dashboard's URL, empty when it is off.
		dashboard string
	}{
		{"CI", task.State{Status: task.StatusCICheck}, "the review_request in the reviewer's inbox", "ci.provider none", ""},
		{"PlanApproval", task.State{TaskID: "T-1", Status: task.StatusAwaitingApproval, Pending: &decision.Decision{Kind: task.KindPlanApproval}}, "x",
			"plan approval of low-risk tasks is not automatic in this configuration: approve it with `ampflow decide T-1 --option approve`", ""},
		{"PlanApprovalOnTheDashboard", task.State{TaskID: "T-1", Status: task.StatusAwaitingApproval, Pending: &decision.Decision{Kind: task.KindPlanApproval}}, "x",
			"approve it on the dashboard (http://127.0.0.1:7480/) or with `ampflow decide T-1 --option approve`", "http://127.0.0.1:7480"},
		{"FinalApproval", task.State{TaskID: "T-1", Status: task.StatusAwaitingAdmin, Pending: &decision.Decision{Kind: task.KindFinalApproval}}, "x",
			"final approval of low-risk tasks is not automatic in this configuration: approve it on the dashboard (http://127.0.0.1:7480/)", "http://127.0.0.1:7480"},
		{"OtherDecision", task.State{Status: task.StatusAwaitingAdmin, Pending: &decision.Decision{Kind: task.KindResultProblem}}, "x", "ampflow pending", ""},
		{"OtherDecisionOnTheDashboard", task.State{Status: task.StatusAwaitingAdmin, Pending: &decision.Decision{Kind: task.KindResultProblem}}, "x",
			"see the dashboard (http://127.0.0.1:7480/) or `ampflow pending`", "http://127.0.0.1:7480"},
		{"NoState", task.State{}, "x", "worker running", ""},
		{"TakenByAnother", task.State{Status: task.StatusInProgress}, "the redispatch in the executor's inbox", "mode pull", ""},
		{"NothingToSay", task.State{Status: task.StatusInProgress}, "the task to be done", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hint(tt.st, tt.step, tt.dashboard)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("hint = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

// TestRunWaitsForPlanApproval plays docs/dashboard.md's approve-from-the-dashboard
// recipe: plan approval of low risk is the admins', and the demo says
// where to give it instead of calling it automatic.
func TestRunWaitsForPlanApproval(t *testing.T) {
	const waiting = "coordinator waiting for your approval"
	for _, tc := range []struct {
		name, dashboard, want string
	}{
		{"OnTheDashboard", "http://127.0.0.1:7480/", waiting + " on the dashboard: http://127.0.0.1:7480/ (or ampflow decide T-2026-007 --option approve)"},
		{"NoDashboard", "", waiting + ": ampflow decide T-2026-007 --option approve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.approveAfter = 5
			var out bytes.Buffer
			o := options(t, f, &out)
			o.Dashboard = tc.dashboard
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			sum, err := Run(ctx, o)
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			text := out.String()
			if sum.Status != task.StatusDone || strings.Count(text, tc.want) != 1 {
				t.Errorf("output lacks %q once:\n%s", tc.want, text)
			}
			if tc.dashboard == "" && strings.Contains(text, "dashboard:") {
				t.Errorf("the demo names a dashboard that is off:\n%s", text)
			}
			if strings.Contains(text, "automatic") {
				t.Errorf("the demo calls an admin's approval automatic:\n%s", text)
			}
			started, waits, approved := strings.Index(text, "started T-2026-007"), strings.Index(text, waiting), strings.Index(text, "plan approved (by ana on dashboard)")
			ack := strings.Index(text, "executor    ACK")
			if started < 0 || waits < started || approved < waits || ack < approved {
				t.Errorf("want started, waiting, approved by ana, the executor's ACK in that order:\n%s", text)
			}
		})
	}
	t.Run("TimedOut", func(t *testing.T) {
		f := newFake(t)
		f.neverApprove = true
		var out bytes.Buffer
		o := options(t, f, &out)
		o.Dashboard = "http://127.0.0.1:7480"
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := Run(ctx, o)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Status != task.StatusAwaitingApproval {
			t.Fatalf("err = %v, want a timeout awaiting approval", err)
		}
		for _, s := range []string{"waiting for an admin: Approve the plan of T-2026-007?", "on the dashboard (http://127.0.0.1:7480/)", "`ampflow decide T-2026-007 --option approve`"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q lacks %q", err, s)
			}
		}
	})
}
