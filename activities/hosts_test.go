package activities

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/ssot"
)

// TestLocalAtTakesBranch: a host whose mirror has not seen the task's
// latest commit (another host ran it and pushed) fetches the URL and
// takes the branch before a check of the result; a mirror branch ahead
// of the URL's is kept.
func TestLocalAtTakesBranch(t *testing.T) {
	ctx := context.Background()
	url, _, work := urlRepo(t)
	g := &Git{Mirrors: filepath.Join(t.TempDir(), "repos")}
	dir, err := g.Local(ctx, url, false)
	if err != nil {
		t.Fatal(err)
	}
	// Another host's run, pushed back.
	gittest.Git(t, work, "switch", "-q", "-c", "feature/x")
	c := gittest.CommitFiles(t, work, "work", map[string]string{"w.txt": "w\n"})
	gittest.Git(t, work, "push", "-q", "origin", "feature/x")

	if got, err := g.LocalAt(ctx, url, "feature/x", c); err != nil || got != dir {
		t.Fatalf("LocalAt = %q, %v; want the mirror %s", got, err, dir)
	}
	if got := gittest.Git(t, dir, "rev-parse", "refs/heads/feature/x"); got != c {
		t.Errorf("mirror's feature/x at %s, want the pushed %s", got, c)
	}
	out, err := g.CheckResult(ctx, CheckResultInput{TaskID: "T-1", MsgID: "M-1", Repo: url, Branch: "feature/x", Commit: c, DefaultBranch: "main"})
	if err != nil || out.Violation != "" {
		t.Fatalf("CheckResult on the other host: %+v, %v", out, err)
	}

	// This host's own commit, not yet on the URL: kept.
	ahead := gittest.Git(t, dir, "commit-tree", "-p", c, "-m", "local", gittest.Git(t, dir, "rev-parse", c+"^{tree}"))
	gittest.Git(t, dir, "update-ref", "refs/heads/feature/x", ahead)
	if err := g.TakeBranch(ctx, dir, "feature/x"); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, dir, "rev-parse", "refs/heads/feature/x"); got != ahead {
		t.Errorf("mirror's feature/x at %s, want its own %s kept", got, ahead)
	}
}

type fakeFleet []ssot.Host

func (f fakeFleet) Hosts(context.Context, time.Time) ([]ssot.Host, error) { return f, nil }

func TestRunnerHost(t *testing.T) {
	seen := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	a := &Activities{Host: "host-b", Fleet: fakeFleet{{Host: "host-a", SeenAt: seen}, {Host: "host-b", SeenAt: seen.Add(time.Hour)}}}
	out, err := a.RunnerHost(context.Background(), RunnerHostInput{TaskID: "T-1", Gone: "host-a"})
	if err != nil || out.Host != "host-b" || !out.GoneSeenAt.Equal(seen) {
		t.Errorf("RunnerHost = %+v, %v; want host-b, host-a seen at %s", out, err, seen)
	}
	// The gone host's own name is never the new home.
	a.Host = "host-a"
	if out, _ := a.RunnerHost(context.Background(), RunnerHostInput{Gone: "host-a"}); out.Host != "" {
		t.Errorf("RunnerHost on the gone host's name = %q, want none", out.Host)
	}
}
