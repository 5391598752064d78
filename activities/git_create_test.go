package activities

import (
	"context"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
)

// TestCheckBranchCreate: with Create, a missing branch is made at the
// default branch's head, once; a protected or malformed name is still
// refused, and without Create a missing branch still is.
func TestCheckBranchCreate(t *testing.T) {
	r := buildFeatureRepo(t)
	g := &Git{}
	ctx := context.Background()

	if _, err := g.CheckBranch(ctx, CheckBranchInput{Repo: r.dir, Branch: "ampflow/add-membercount"}); err == nil {
		t.Fatal("a missing branch was taken without Create")
	}
	for range 2 { // a retried activity finds the branch made
		res, err := g.CheckBranch(ctx, CheckBranchInput{Repo: r.dir, Branch: "ampflow/add-membercount", Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Head != r.mainHead || res.DefaultHead != r.mainHead {
			t.Fatalf("got %+v, want the branch at main's head %s", res, r.mainHead)
		}
	}
	if got := gittest.Git(t, r.dir, "rev-parse", "refs/heads/ampflow/add-membercount"); got != r.mainHead {
		t.Errorf("branch at %s, want %s", got, r.mainHead)
	}
	if head := gittest.Git(t, r.dir, "rev-parse", "--abbrev-ref", "HEAD"); head != "feature/x" {
		t.Errorf("the checkout moved to %s", head)
	}
	for name, tc := range map[string]struct{ branch, code string }{
		"Protected": {"main", ErrProtectedBranch},
		"Malformed": {"bad..name", ErrBranchMissing},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := g.CheckBranch(ctx, CheckBranchInput{Repo: r.dir, Branch: tc.branch, Create: true})
			appErr(t, err, tc.code, true)
		})
	}
}
