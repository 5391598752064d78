package delivery

import (
	"context"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// BenchmarkRunnerResult measures what ampflow does between a runner's
// exit and its task_result handed to the task: committing what was left
// (nothing here), reading the commit, diffing it against the default
// branch with git, building and submitting the result (to an in-memory
// submitter: the update's round trip through Temporal is not in it).
func BenchmarkRunnerResult(b *testing.B) {
	repo := gittest.NewRepo(b, "main")
	gittest.Git(b, repo, "switch", "-q", "-c", "feature/x")
	gittest.CommitFiles(b, repo, "add hello", map[string]string{"hello.txt": "hello\n", "src/app.go": gittest.Lines(40, "x")})
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-001", time.Unix(1_800_000_000, 0), &amp.TaskDispatch{Description: "d", Repo: repo,
		Branch: "feature/x", RiskLevel: amp.RiskLow, Subtasks: []amp.Subtask{{SubtaskID: "S1", Description: "s", EstimatedLines: 1}},
		AcceptanceCriteria: []string{"c"}})
	sub := &fakeSubmitter{}
	d := &Delivery{Submit: sub, Git: &activities.Git{}}
	st := &runState{d: d, ctx: context.Background(), m: m}
	out := runner.Outcome{Reason: runner.ReasonExited, Result: true,
		Text: `done {"criteria_met": [true], "notes": [], "summary": "ok"}`}
	for b.Loop() {
		if err := d.submitResult(context.Background(), activities.DeliverInput{Message: m, Repo: repo, Branch: "feature/x"}, repo, st, out); err != nil {
			b.Fatal(err)
		}
	}
	if len(sub.got) == 0 {
		b.Fatal("nothing submitted")
	}
}
