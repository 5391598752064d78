package activities

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/activities/gittest"
)

// pushMain commits files on the origin's main from a clone of its own,
// as another merge or a push by hand would, and returns the new head.
func pushMain(t *testing.T, bare string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "other")
	gittest.Git(t, filepath.Dir(dir), "clone", "-q", bare, dir)
	head := gittest.CommitFiles(t, dir, "main moves", files)
	gittest.Git(t, dir, "push", "-q", "origin", "HEAD:refs/heads/main")
	return head
}

func TestQueueRebaseRemote(t *testing.T) {
	const token = "ghs_QUEUEtoken123"
	ctx := context.Background()
	bare, clone := githubtest.Origin(t)
	remote := githubtest.GitHTTP(t, filepath.Dir(bare), token) + "/" + filepath.Base(bare)
	localMain := gittest.Git(t, clone, "rev-parse", "main")
	gittest.Git(t, clone, "checkout", "-q", "-b", "feature/x")
	head := gittest.CommitFiles(t, clone, "work", map[string]string{"a.txt": "a\n"})
	p := &Pusher{Git: &Git{}, Token: token, Secrets: child.NewScrubber([]string{token})}
	if _, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/x", Remote: remote, Commit: head}); err != nil {
		t.Fatal(err)
	}
	in := QueueRebaseRemoteInput{TaskID: "T-2026-001", Repo: clone, Remote: remote, Branch: "feature/x", Head: head, Target: "main"}

	t.Run("OnTop", func(t *testing.T) {
		res, err := p.QueueRebaseRemote(ctx, in)
		if err != nil || res.Rebased != head || res.Base != localMain {
			t.Fatalf("rebase of a branch on the target's head = %+v, %v; want itself", res, err)
		}
	})

	t.Run("Rebased", func(t *testing.T) {
		moved := pushMain(t, bare, map[string]string{"b.txt": "b\n"})
		res, err := p.QueueRebaseRemote(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Base != moved || res.Head != head || res.Rebased == "" || res.Rebased == head {
			t.Fatalf("rebase = %+v; want onto %s", res, moved)
		}
		if parent := gittest.Git(t, clone, "rev-parse", res.Rebased+"^"); parent != moved {
			t.Errorf("the rebase's parent is %s, want the remote's main %s", parent, moved)
		}
		if got := gittest.Git(t, clone, "rev-parse", QueueRef("T-2026-001")); got != res.Rebased {
			t.Errorf("%s at %s, want the rebase", QueueRef("T-2026-001"), got)
		}
		// Nothing of the repository's branches moved: the local main is
		// where it was, the task's branch too.
		if gittest.Git(t, clone, "rev-parse", "main") != localMain || gittest.Git(t, clone, "rev-parse", "feature/x") != head {
			t.Error("the rebase moved a branch of the repository")
		}
		// The rebase is pushed over the head with a lease on it.
		if _, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/x", Remote: remote, Commit: res.Rebased, Lease: head}); err != nil {
			t.Fatal(err)
		}
		if got := githubtest.Git(t, bare, "rev-parse", "refs/heads/feature/x"); got != res.Rebased {
			t.Errorf("the remote's feature/x at %s, want the rebase", got)
		}
		in.Head = res.Rebased

		// With no pull request the target is pushed to the rebase, with a
		// lease on its head at the rebase: once, whatever the retries.
		githubtest.Git(t, bare, "update-ref", "refs/heads/release", moved)
		move := QueueMoveRemoteInput{TaskID: "T-2026-001", Repo: clone, Remote: remote, Target: "release", Base: moved, Rebased: res.Rebased}
		if mv, err := p.QueueMoveRemote(ctx, move); err != nil || mv.Head != res.Rebased || mv.Already || mv.Moved {
			t.Fatalf("move = %+v, %v", mv, err)
		}
		if got := githubtest.Git(t, bare, "rev-parse", "refs/heads/release"); got != res.Rebased {
			t.Errorf("the remote's release at %s, want the rebase", got)
		}
		if mv, err := p.QueueMoveRemote(ctx, move); err != nil || !mv.Already {
			t.Errorf("retried move = %+v, %v; want already there", mv, err)
		}
		githubtest.Git(t, bare, "update-ref", "refs/heads/release", head)
		if mv, err := p.QueueMoveRemote(ctx, move); err != nil || !mv.Moved || mv.Head != head {
			t.Errorf("move of a target moved meanwhile = %+v, %v; want it left at %s", mv, err, head)
		}
		if got := githubtest.Git(t, bare, "rev-parse", "refs/heads/release"); got != head {
			t.Errorf("a moved target was moved again, to %s", got)
		}
	})

	t.Run("Conflict", func(t *testing.T) {
		pushMain(t, bare, map[string]string{"a.txt": "not a\n"})
		res, err := p.QueueRebaseRemote(ctx, in)
		if err != nil || res.Rebased != "" || len(res.Conflicts) != 1 || res.Conflicts[0] != "a.txt" {
			t.Fatalf("rebase = %+v, %v; want a conflict in a.txt", res, err)
		}
	})

	t.Run("BadToken", func(t *testing.T) {
		bad := &Pusher{Git: &Git{}, Token: "ghs_wrong", Secrets: child.NewScrubber(nil)}
		_, err := bad.QueueRebaseRemote(ctx, in)
		appErr(t, err, ErrPush, true)
		if strings.Contains(err.Error(), token) {
			t.Errorf("the error holds the token: %v", err)
		}
	})
}

func TestQueueMergePull(t *testing.T) {
	ctx := context.Background()
	bare, clone := githubtest.Origin(t)
	base := gittest.Git(t, clone, "rev-parse", "main")
	gittest.Git(t, clone, "checkout", "-q", "-b", "feature/x")
	head := gittest.CommitFiles(t, clone, "work", map[string]string{"a.txt": "a\n"})
	gittest.Git(t, clone, "push", "-q", "origin", "feature/x")
	srv := githubtest.New(t, githubtest.Options{Token: "tok", Origin: bare})
	p := newPulls(t, srv)
	pr, err := p.Sync(ctx, PullRequestInput{TaskID: "T-2026-002", GitHubRepo: "github.com/acme/widget", Branch: "feature/x", Base: "main", Description: "Add a"})
	if err != nil {
		t.Fatal(err)
	}
	in := QueueMergePullInput{TaskID: "T-2026-002", GitHubRepo: "github.com/acme/widget", Number: pr.Number, Target: "main",
		Base: base, Commit: head, Title: "Add a (#1)"}
	merges := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if r.Method == "PUT" && strings.HasSuffix(r.Path, "/merge") {
				n++
			}
		}
		return n
	}

	t.Run("Rules", func(t *testing.T) {
		tin := QueueTargetInput{TaskID: "T-2026-002", GitHubRepo: "github.com/acme/widget", Target: "main"}
		srv.SetRules("main", "pull_request")
		if res, err := p.QueueTarget(ctx, tin); err != nil || len(res.Rules) != 1 {
			t.Fatalf("rules of main = %+v, %v", res, err)
		}
		srv.SetRules("main", "pull_request", "merge_queue")
		if res, err := p.QueueTarget(ctx, tin); err != nil || !res.MergeQueue {
			t.Errorf("rules of main behind GitHub's merge queue = %+v, %v", res, err)
		}
		srv.SetRules("main")
	})

	t.Run("TargetMoved", func(t *testing.T) {
		stale := in
		stale.Base = strings.Repeat("0", 40)
		res, err := p.QueueMerge(ctx, stale)
		if err != nil || !res.Moved || res.Head != base || merges() != 0 {
			t.Fatalf("merge over a moved target = %+v, %v, %d merges; want moved to %s and no merge", res, err, merges(), base)
		}
	})

	t.Run("HeadModified", func(t *testing.T) {
		other := in
		other.Commit = base
		_, err := p.QueueMerge(ctx, other)
		appErr(t, err, ErrPush, true)
	})

	t.Run("NotMergeable", func(t *testing.T) {
		srv.SetConflict(pr.Number, true)
		defer srv.SetConflict(pr.Number, false)
		_, err := p.QueueMerge(ctx, in)
		appErr(t, err, ErrQueueMerge, true)
	})

	t.Run("MergedOnce", func(t *testing.T) {
		before := merges()
		res, err := p.QueueMerge(ctx, in)
		if err != nil || res.SHA == "" || res.Moved {
			t.Fatalf("merge = %+v, %v", res, err)
		}
		if main := githubtest.Git(t, bare, "rev-parse", "refs/heads/main"); main != res.SHA {
			t.Errorf("the origin's main at %s, want the merge %s", main, res.SHA)
		}
		// A retry, as after a worker killed before it answered, takes the
		// merge commit and merges nothing.
		again, err := p.QueueMerge(ctx, in)
		if err != nil || again.SHA != res.SHA || merges() != before+1 {
			t.Errorf("retried merge = %+v, %v, %d merges; want %s and one merge", again, err, merges()-before, res.SHA)
		}
	})
}

func TestQueueGitHubMergeQueue(t *testing.T) {
	ctx := context.Background()
	bare, clone := githubtest.Origin(t)
	gittest.Git(t, clone, "checkout", "-q", "-b", "feature/x")
	head := gittest.CommitFiles(t, clone, "work", map[string]string{"a.txt": "a\n"})
	gittest.Git(t, clone, "push", "-q", "origin", "feature/x")
	gittest.Git(t, clone, "checkout", "-q", "-b", "feature/y", "main")
	other := gittest.CommitFiles(t, clone, "work", map[string]string{"b.txt": "b\n"})
	gittest.Git(t, clone, "push", "-q", "origin", "feature/y")
	srv := githubtest.New(t, githubtest.Options{Token: "tok", Origin: bare})
	p := newPulls(t, srv)
	open := func(branch string) PullRequestResult {
		pr, err := p.Sync(ctx, PullRequestInput{TaskID: "T-2026-003", GitHubRepo: "github.com/acme/widget", Branch: branch, Base: "main", Description: "Add " + branch})
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	x, y := open("feature/x"), open("feature/y")
	in := QueueEnqueueInput{TaskID: "T-2026-003", GitHubRepo: "github.com/acme/widget", Number: x.Number, NodeID: x.NodeID, Head: head}

	// Not enabled on main yet: GitHub refuses, for good.
	_, err := p.Enqueue(ctx, in)
	appErr(t, err, ErrQueueMerge, true)
	srv.SetRules("main", "merge_queue")
	stale := in
	stale.Head = other
	_, err = p.Enqueue(ctx, stale)
	appErr(t, err, ErrQueueMerge, true)

	for range 2 { // a retry finds it queued
		if e, err := p.Enqueue(ctx, in); err != nil || !e.Queued {
			t.Fatalf("enqueue = %+v, %v", e, err)
		}
	}
	if q := srv.MergeQueue(); len(q) != 1 || q[0] != x.Number {
		t.Fatalf("GitHub's merge queue %v, want #%d once", q, x.Number)
	}
	yin := QueueEnqueueInput{TaskID: "T-2026-004", GitHubRepo: "github.com/acme/widget", Number: y.Number, NodeID: y.NodeID, Head: other}
	if _, err := p.Enqueue(ctx, yin); err != nil {
		t.Fatal(err)
	}
	srv.Dequeue(y.Number)
	if e, err := p.QueueEntry(ctx, yin); err != nil || e.Queued || e.Merged {
		t.Errorf("entry of a pull request taken out = %+v, %v", e, err)
	}
	if merged := srv.ProcessMergeQueue(); len(merged) != 1 {
		t.Fatalf("GitHub merged %v", merged)
	}
	e, err := p.QueueEntry(ctx, in)
	if main := githubtest.Git(t, bare, "rev-parse", "refs/heads/main"); err != nil || !e.Merged || e.Queued || e.SHA != main {
		t.Errorf("entry after GitHub merged = %+v, %v; want merged as main's %s", e, err, main)
	}
	if e, err := p.Enqueue(ctx, in); err != nil || !e.Merged {
		t.Errorf("enqueue of a merged pull request = %+v, %v; want it merged, not queued", e, err)
	}
}
