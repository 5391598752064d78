package e2e

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/goals"
)

// rebase plays the executor's merge queue round: it rebases the branch
// onto onto (main, or origin/main), keeping both sides of a conflict in
// file (onto's lines, then the branch's), commits fix.txt when CI
// failed, and reports the rebased head.
func (a *agent) rebase(d amp.Message, file, onto string) amp.Message {
	a.t.Helper()
	cmd := exec.Command("git", "-c", "user.name=e2e", "-c", "user.email=e2e@localhost", "rebase", onto)
	cmd.Dir = a.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		ours := git(a.t, a.repo, "show", onto+":"+file)
		theirs := git(a.t, a.repo, "show", "REBASE_HEAD:"+file)
		writeFile(a.t, filepath.Join(a.repo, file), ours+"\n"+theirs+"\n")
		git(a.t, a.repo, "add", file)
		cont := exec.Command("git", "-c", "user.name=e2e", "-c", "user.email=e2e@localhost", "-c", "core.editor=true", "rebase", "--continue")
		cont.Dir = a.repo
		if out2, err := cont.CombinedOutput(); err != nil {
			a.t.Fatalf("rebase --continue: %v\n%s\n%s", err, out, out2)
		}
	}
	if strings.Contains(d.Dispatch().Description, "CI fails") {
		writeFile(a.t, filepath.Join(a.repo, "fix.txt"), "fixed\n")
		git(a.t, a.repo, "add", "fix.txt")
		git(a.t, a.repo, "commit", "-q", "-m", "fix CI on main")
	}
	commit := git(a.t, a.repo, "rev-parse", "HEAD")
	files, added, removed := numstat(a.t, a.repo)
	yes := true
	return amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, d.TaskID, time.Now(), &amp.TaskResult{
		SubtaskID:        d.Dispatch().Subtasks[0].SubtaskID,
		CompletionStatus: amp.StatusComplete,
		DiffSummary:      amp.DiffSummary{FilesChanged: files, LinesAdded: added, LinesRemoved: removed},
		SelfAssessment:   amp.SelfAssessment{CriteriaMet: []*bool{&yes}, Notes: []string{"rebased onto main"}},
		WorkLog:          []amp.WorkLogEntry{{Timestamp: time.Now().UTC().Format(time.RFC3339), Action: "rebase", File: file, Detail: "rebased onto main"}},
		CommitHash:       commit,
	})
}

// mergedFiles lists, oldest first, the file each commit of main past
// the first adds or changes.
func mergedFiles(t *testing.T, repo string) []string {
	t.Helper()
	var files []string
	for _, f := range strings.Fields(git(t, repo, "log", "--reverse", "--format=", "--name-only", "main")) {
		if f != "README.md" {
			files = append(files, f)
		}
	}
	return files
}

func goalDone(t *testing.T, g *goalPlayer, within time.Duration) goals.View {
	t.Helper()
	v := g.until("end", within, func(v goals.View) bool { return v.Status.Terminal() })
	if v.Status != goal.StatusDone {
		t.Fatalf("goal %s is %s (%s): %+v", g.id, v.Status, v.Reason, v.Tasks)
	}
	for _, tv := range v.Tasks {
		if tv.Status != goal.TaskDone || tv.Queue != task.QueueMerged || tv.Merged == "" {
			t.Errorf("task %s: %s, queue %s, merged %q", tv.Key, tv.Status, tv.Queue, tv.Merged)
		}
	}
	return v
}

// TestGoalMergeQueue runs goals whose tasks go through main's merge
// queue, on one `ampflow dev`.
func TestGoalMergeQueue(t *testing.T) {
	p := startDev(t, t.TempDir())
	c := newAPIClient(t, p.api, "")

	// Two chains of two in parallel, then a join: all five end merged
	// into main, each after what it is blocked by, main a line of
	// rebased commits.
	t.Run("TwoChainsAndJoin", func(t *testing.T) {
		repo := gitRepo(t)
		git(t, repo, "checkout", "-q", "--detach", "main")
		g := startGoal(t, c, repo,
			map[string]any{"key": "a1", "plan": goalPlan("a1")},
			map[string]any{"key": "a2", "plan": goalPlan("a2"), "blocked_by": []string{"a1"}},
			map[string]any{"key": "b1", "plan": goalPlan("b1")},
			map[string]any{"key": "b2", "plan": goalPlan("b2"), "blocked_by": []string{"b1"}},
			map[string]any{"key": "join", "plan": goalPlan("join"), "blocked_by": []string{"a2", "b2"}})
		v := goalDone(t, g, 100*time.Second)
		files := mergedFiles(t, repo)
		if len(files) != 5 {
			t.Fatalf("main's commits change %v, want the five tasks' files", files)
		}
		at := func(key string) int { return slices.Index(files, key+".txt") }
		for _, e := range [][2]string{{"a1", "a2"}, {"b1", "b2"}, {"a2", "join"}, {"b2", "join"}} {
			if at(e[0]) < 0 || at(e[0]) > at(e[1]) {
				t.Errorf("main's order %v: %s is not merged before %s", files, e[0], e[1])
			}
		}
		if merges := git(t, repo, "rev-list", "--merges", "main"); merges != "" {
			t.Errorf("main has merge commits: %s", merges)
		}
		for _, tv := range v.Tasks {
			if tv.Key == "join" && git(t, repo, "rev-parse", "main") != tv.Merged {
				t.Errorf("main is at %s, join merged %s", git(t, repo, "rev-parse", "main"), tv.Merged)
			}
		}
		var joinID string
		for _, tv := range v.Tasks {
			if tv.Key == "join" {
				joinID = tv.TaskID
			}
		}
		if st := c.state(joinID); !slices.ContainsFunc(st.Timeline, func(e task.TimelineEntry) bool {
			return e.Kind == "queue" && strings.HasPrefix(e.Note, "merged into main as "+st.MergeCommit[:7]+" (queue)")
		}) {
			t.Errorf("join's timeline lacks its merge: %+v", st.Timeline)
		}
		t.Logf("goal %s done in %s", g.id, v.EndedAt.Sub(v.StartedAt).Round(time.Millisecond))
	})

	// The same five tasks, each taking its executor 3 s, as the graph
	// of two chains and a join, then as one chain: the graph's
	// wall-clock time is its longest path's, three tasks', not five.
	t.Run("WallClock", func(t *testing.T) {
		const pace = 3 * time.Second
		run := func(edges map[string][]string) time.Duration {
			repo := gitRepo(t)
			git(t, repo, "checkout", "-q", "--detach", "main")
			var tasks []any
			for _, k := range []string{"a1", "a2", "b1", "b2", "join"} {
				tasks = append(tasks, map[string]any{"key": k, "plan": goalPlan(k), "blocked_by": edges[k]})
			}
			g := startGoal(t, c, repo, tasks...)
			g.pace = pace
			v := goalDone(t, g, 3*time.Minute)
			return v.EndedAt.Sub(v.StartedAt)
		}
		graph := run(map[string][]string{"a2": {"a1"}, "b2": {"b1"}, "join": {"a2", "b2"}})
		chain := run(map[string][]string{"a2": {"a1"}, "b1": {"a2"}, "b2": {"b1"}, "join": {"b2"}})
		t.Logf("five tasks of %s each: the graph %s, one after another %s (%.2f)", pace,
			graph.Round(100*time.Millisecond), chain.Round(100*time.Millisecond), graph.Seconds()/chain.Seconds())
		if graph >= chain-pace {
			t.Errorf("the graph took %s, one after another %s: less than one task's %s apart", graph, chain, pace)
		}
	})

	// A target checked out in the repository is not moved: the admins
	// are asked, and once the checkout is switched away a retry merges.
	t.Run("TargetCheckedOut", func(t *testing.T) {
		repo := gitRepo(t)
		git(t, repo, "checkout", "-q", "main")
		g := startGoal(t, c, repo, map[string]any{"key": "solo", "plan": goalPlan("solo")})
		var asked *decision.Decision
		v := g.until("merge_queue decision", 60*time.Second, func(v goals.View) bool {
			if id := v.Tasks[0].TaskID; id != "" {
				if st := c.state(id); st.Pending != nil && st.Pending.Kind == task.KindMergeQueue {
					asked = st.Pending
				}
			}
			return asked != nil
		})
		if !strings.Contains(asked.Prompt, "checked out") || git(t, repo, "rev-list", "--count", "main") != "1" {
			t.Fatalf("asked %q; main has %s commits", asked.Prompt, git(t, repo, "rev-list", "--count", "main"))
		}
		git(t, repo, "switch", "-q", "--detach")
		c.decide(*asked, task.OptRetryQueue)
		v = goalDone(t, g, 60*time.Second)
		if git(t, repo, "rev-parse", "main") != v.Tasks[0].Merged {
			t.Errorf("main is at %s, the task merged %s", git(t, repo, "rev-parse", "main"), v.Tasks[0].Merged)
		}
	})

	// Two parallel tasks write the same file: the second to reach the
	// queue no longer rebases cleanly, gets a round, and both end
	// merged, main keeping both.
	t.Run("ConflictRound", func(t *testing.T) {
		repo := gitRepo(t)
		git(t, repo, "checkout", "-q", "--detach", "main")
		g := startGoal(t, c, repo,
			map[string]any{"key": "left", "plan": goalPlan("left")},
			map[string]any{"key": "right", "plan": goalPlan("right")})
		g.file = func(string) string { return "shared.txt" }
		v := goalDone(t, g, 100*time.Second)
		rounds := 0
		for _, tv := range v.Tasks {
			rounds += tv.QueueRounds
		}
		if rounds != 1 || g.rounds["left"]+g.rounds["right"] != 1 {
			t.Errorf("queue rounds %d, rebase dispatches %v: want one for the second in the queue", rounds, g.rounds)
		}
		shared := git(t, repo, "show", "main:shared.txt")
		if !strings.Contains(shared, "left") || !strings.Contains(shared, "right") {
			t.Errorf("main's shared.txt is %q, want both tasks' lines", shared)
		}
	})
}

// TestGoalMergeQueueCI: with a CI command that fails when a.txt and
// b.txt are both there without fix.txt, each of two parallel tasks
// passes CI alone; the second to reach the queue fails CI on its
// rebase, goes back to its executor, which adds fix.txt, and both end
// merged.
func TestGoalMergeQueueCI(t *testing.T) {
	p := startDev(t, t.TempDir(), "AMPFLOW_CI_PROVIDER=command",
		"AMPFLOW_CI_COMMAND_RUN=sh,-c,test ! -f a.txt || test ! -f b.txt || test -f fix.txt")
	c := newAPIClient(t, p.api, "")
	repo := gitRepo(t)
	git(t, repo, "checkout", "-q", "--detach", "main")
	g := startGoal(t, c, repo,
		map[string]any{"key": "a", "plan": goalPlan("a")},
		map[string]any{"key": "b", "plan": goalPlan("b")})
	v := goalDone(t, g, 100*time.Second)
	rounds := 0
	for _, tv := range v.Tasks {
		rounds += tv.QueueRounds
	}
	if rounds != 1 || g.rounds["a"]+g.rounds["b"] != 1 {
		t.Errorf("queue rounds %d, round dispatches %v: want one, for CI on the second's rebase", rounds, g.rounds)
	}
	files := mergedFiles(t, repo)
	if len(files) != 3 || files[2] != "fix.txt" {
		t.Errorf("main's commits change %v, want a.txt and b.txt, then fix.txt", files)
	}
}
