package e2e

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/goals"
)

// TestGoalMergeQueueKilled kills `ampflow dev` with SIGKILL twice while
// the merge queue moves main, its git held there (gitHolds): first just
// before the compare and swap of main, then, after the restart, between
// main's move and the task's branch's. Each restart goes on where the
// kill left it: both tasks of the goal end merged, main holds each
// task's commit once and nothing else, each task's timeline says it was
// merged once, and no queue ref is left behind.
func TestGoalMergeQueueKilled(t *testing.T) {
	holds := gitHolds(t)
	p := startDev(t, t.TempDir(), "PATH="+holds.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	c := newAPIClient(t, p.api, "")
	repo := gitRepo(t)
	git(t, repo, "checkout", "-q", "--detach", "main")
	start := git(t, repo, "rev-parse", "main")

	atTarget := holds.hold("target", "update-ref", "refs/heads/main", "in "+repo)
	g := startGoal(t, c, repo,
		map[string]any{"key": "a1", "plan": goalPlan("a1")},
		map[string]any{"key": "a2", "plan": goalPlan("a2")})
	g.until("the queue's move of main held", 90*time.Second, func(goals.View) bool { return atTarget(nil) })
	if got := git(t, repo, "rev-parse", "main"); got != start {
		t.Fatalf("main moved to %s before the held move", got)
	}

	// Killed before main moved: the retry moves it.
	p.kill()
	atBranch := holds.hold("branch", "update-ref", "ampflow merge queue refs/heads/goal/", "in "+repo)
	p.restart()
	restarted := time.Now()
	g.until("main moved and the branch's move held", 60*time.Second, func(goals.View) bool { return atBranch(nil) })
	t.Logf("restart to main moved: %s", time.Since(restarted).Round(10*time.Millisecond))
	moved := git(t, repo, "rev-parse", "main")
	if moved == start {
		t.Fatalf("main did not move before the branch's move")
	}

	// Killed after main moved: the retry finds it moved and moves it no
	// further.
	p.kill()
	p.restart()
	restarted = time.Now()
	v := goalDone(t, g, 90*time.Second)
	t.Logf("restart to goal done: %s", time.Since(restarted).Round(10*time.Millisecond))

	files := mergedFiles(t, repo)
	slices.Sort(files)
	if !slices.Equal(files, []string{"a1.txt", "a2.txt"}) {
		t.Errorf("main's commits change %v, want a1.txt and a2.txt once each", files)
	}
	if n := strings.Count(git(t, repo, "rev-list", start+"..main"), "\n") + 1; n != 2 {
		t.Errorf("main has %d commits past the start, want 2", n)
	}
	if merges := git(t, repo, "rev-list", "--merges", "main"); merges != "" {
		t.Errorf("main has merge commits: %s", merges)
	}
	first := ""
	for _, tv := range v.Tasks {
		st := c.state(tv.TaskID)
		if st.Status != task.StatusDone || st.MergeCommit != tv.Merged {
			t.Errorf("%s: %s, merge commit %s, goal says %s", tv.Key, st.Status, st.MergeCommit, tv.Merged)
		}
		if tv.Merged == moved {
			first = tv.Key
		}
		n := 0
		for _, e := range st.Timeline {
			if e.Kind == "queue" && strings.HasPrefix(e.Note, "merged into main as ") {
				n++
			}
		}
		if n != 1 || tv.QueueRounds != 0 {
			t.Errorf("%s: merged %d times in its timeline, %d queue rounds; want once and none", tv.Key, n, tv.QueueRounds)
		}
		if ref := git(t, repo, "for-each-ref", activities.QueueRef(tv.TaskID)); ref != "" {
			t.Errorf("%s: the queue's ref is left: %s", tv.Key, ref)
		}
	}
	if first == "" {
		t.Errorf("no task merged as %s, the head the first kill's retry made: %+v", moved, v.Tasks)
	}
	// The first task's branch moved to its merge after the second kill.
	for _, tv := range v.Tasks {
		if tv.Key == first && git(t, repo, "rev-parse", goal.Branch(g.id, tv.Key)) != moved {
			t.Errorf("%s's branch is not at its merge %s", tv.Key, moved)
		}
	}
}
