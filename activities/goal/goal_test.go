package goal

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

type fakeTasks struct {
	mu     sync.Mutex
	starts []task.Input
	steers []task.SteerInput
}

func (f *fakeTasks) StartNext(_ context.Context, in task.Input, _ int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, in)
	return "T-2026-001", nil
}

func (f *fakeTasks) Wait(context.Context, string) (task.Result, error) { return task.Result{}, nil }

func (f *fakeTasks) Steer(_ context.Context, _ string, in task.SteerInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steers = append(f.steers, in)
	return nil
}

func newGoal(t *testing.T) (*Goal, *fakeTasks, string) {
	repo := gittest.NewRepo(t, "main")
	store, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tasks := &fakeTasks{}
	return &Goal{Git: &activities.Git{}, Tasks: tasks, Store: store, Now: time.Now}, tasks, repo
}

// TestStartTaskBranchesFromTarget: the task's branch is made at the
// target's head, kept when it exists, and the start carries the goal's
// request key.
func TestStartTaskBranchesFromTarget(t *testing.T) {
	g, tasks, repo := newGoal(t)
	ctx := context.Background()
	gittest.Git(t, repo, "checkout", "-q", "-b", "release")
	release := gittest.CommitFiles(t, repo, "release work", map[string]string{"r.txt": "r\n"})
	gittest.Git(t, repo, "checkout", "-q", "main")
	tgt, err := g.GoalTarget(ctx, TargetInput{Repo: repo})
	if err != nil || tgt.Target != "main" {
		t.Fatalf("default target %+v %v", tgt, err)
	}
	in := StartTaskInput{GoalID: "G-0000abcd", Key: "api", Target: "release", Input: task.Input{Plan: amp.TaskDispatch{Repo: repo, Branch: "goal/G-0000abcd/api"}}}
	out, err := g.GoalStartTask(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Base != release || gittest.Git(t, repo, "rev-parse", "goal/G-0000abcd/api") != release {
		t.Errorf("base %s, want release's head %s", out.Base, release)
	}
	if len(tasks.starts) != 1 || tasks.starts[0].RequestKey != RequestKey("G-0000abcd", "api", 0) {
		t.Errorf("starts %+v", tasks.starts)
	}
	if _, err := g.GoalTarget(ctx, TargetInput{Repo: repo, Target: "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("a missing target: %v", err)
	}
}

// TestChangedFilesAndTell: a branch's files since it left the target; a
// message told twice is written once.
func TestChangedFilesAndTell(t *testing.T) {
	g, tasks, repo := newGoal(t)
	ctx := context.Background()
	gittest.Git(t, repo, "checkout", "-q", "-b", "work")
	gittest.CommitFiles(t, repo, "work", map[string]string{"b.go": "b\n", "a.go": "a\n"})
	gittest.Git(t, repo, "checkout", "-q", "main")
	gittest.CommitFiles(t, repo, "main moves on", map[string]string{"m.go": "m\n"})
	out, err := g.ChangedFiles(ctx, ChangedFilesInput{Repo: repo, Target: "main", Branches: []string{"work", "gone"}})
	if err != nil || strings.Join(out.Files["work"], ",") != "a.go,b.go" || out.Files["gone"] != nil {
		t.Fatalf("files %v %v", out.Files, err)
	}
	in := TellTaskInput{TaskID: "T-2026-001", From: "goal G-0000abcd", Text: "both change a.go"}
	for range 2 {
		if err := g.GoalTellTask(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	msgs, _ := g.Store.TaskMessages(ctx, "T-2026-001")
	if len(msgs) != 1 || len(tasks.steers) != 2 || tasks.steers[0].ID != msgs[0].ID {
		t.Errorf("messages %+v steers %+v", msgs, tasks.steers)
	}
}

// TestStartTaskBranchesFromRemoteTarget: with Remote the task's branch
// is made at the target's head on origin, which has a merge the clone's
// own main lacks, and Base is that head; without a pusher it is refused.
func TestStartTaskBranchesFromRemoteTarget(t *testing.T) {
	g, _, repo := newGoal(t)
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "origin.git")
	gittest.Git(t, repo, "clone", "-q", "--bare", repo, bare)
	gittest.Git(t, repo, "remote", "add", "origin", bare)
	local := gittest.Git(t, repo, "rev-parse", "main")
	other := filepath.Join(t.TempDir(), "other")
	gittest.Git(t, repo, "clone", "-q", bare, other)
	merged := gittest.CommitFiles(t, other, "the blocker's merge", map[string]string{"a.txt": "a\n"})
	gittest.Git(t, other, "push", "-q", "origin", "HEAD:refs/heads/main")
	in := StartTaskInput{GoalID: "G-0000abcd", Key: "b", Target: "main", Remote: true,
		Input: task.Input{Plan: amp.TaskDispatch{Repo: repo, Branch: "goal/G-0000abcd/b"}}}

	if _, err := g.GoalStartTask(ctx, in); err == nil {
		t.Fatal("a remote target read by a worker without a pusher")
	}
	g.Pusher = &activities.Pusher{Git: g.Git}
	out, err := g.GoalStartTask(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Base != merged || gittest.Git(t, repo, "rev-parse", "goal/G-0000abcd/b") != merged {
		t.Errorf("base %s, want origin's main %s (the clone's is %s)", out.Base, merged, local)
	}
	if got := gittest.Git(t, repo, "rev-parse", "main"); got != local {
		t.Errorf("the clone's main moved to %s", got)
	}
}
