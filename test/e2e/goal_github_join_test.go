package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/github/githubtest"
)

// TestGoalGitHubQueueJoin runs the five tasks of TestGoalMergeQueue's
// graph (two chains of two in parallel, then a join) on a clone whose
// origin is on the fake GitHub: main's queue merges every pull request
// through GitHub's API, each after the tasks it is blocked by, and
// GitHub's CI passed on each pull request's head before its merge, so
// main is green after each.
func TestGoalGitHubQueueJoin(t *testing.T) {
	q := newGitHubQueueSetup(t, "ghs_e2eQueueJoinToken0123456")
	g := startGoal(t, q.c, q.repo,
		map[string]any{"key": "a1", "plan": goalPlan("a1")},
		map[string]any{"key": "a2", "plan": goalPlan("a2"), "blocked_by": []string{"a1"}},
		map[string]any{"key": "b1", "plan": goalPlan("b1")},
		map[string]any{"key": "b2", "plan": goalPlan("b2"), "blocked_by": []string{"b1"}},
		map[string]any{"key": "join", "plan": goalPlan("join"), "blocked_by": []string{"a2", "b2"}})
	v := goalDone(t, g, 4*time.Minute)

	// The origin's main is five merges on the first commit, oldest last.
	line := strings.Fields(githubtest.Git(t, q.bare, "log", "--first-parent", "--format=%H", "main"))
	if len(line) != 6 {
		t.Fatalf("the origin's main is %v, want five merges on the first commit", line)
	}
	at := map[string]int{} // key → place of its merge on main, oldest first
	for _, tv := range v.Tasks {
		at[tv.Key] = len(line) - 1 - slices.Index(line, tv.Merged)
		if i := slices.Index(line, tv.Merged); i < 0 || i == len(line)-1 {
			t.Errorf("%s merged %q, not one of main's merges %v", tv.Key, tv.Merged, line)
		}
		githubtest.Git(t, q.bare, "cat-file", "-e", "main:"+tv.Key+".txt")
	}
	for _, e := range [][2]string{{"a1", "a2"}, {"b1", "b2"}, {"a2", "join"}, {"b2", "join"}} {
		if at[e[0]] >= at[e[1]] {
			t.Errorf("main's merges in order %v: %s is not merged before %s", at, e[0], e[1])
		}
	}
	pulls := q.gh.Pulls()
	if len(pulls) != 5 {
		t.Fatalf("%d pull requests, want five", len(pulls))
	}
	for _, pr := range pulls {
		if !pr.Merged || !slices.Contains(line, pr.MergeCommitSHA) {
			t.Errorf("pull request #%d: merged %v as %s", pr.Number, pr.Merged, pr.MergeCommitSHA)
		}
		if !slices.Contains(q.asked(), pr.Head.SHA) {
			t.Errorf("pull request #%d was merged with head %s, whose CI GitHub was not asked about (%v)", pr.Number, pr.Head.SHA, q.asked())
		}
	}
}
