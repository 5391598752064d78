package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	runnerpkg "github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/fleet"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/repomesh"
)

// killPoint is one task of TestRunnerKillMatrix: the point of a runner's
// life it is at when `ampflow dev` is killed, how the test sees it got
// there, and whether the restarted worker must name a recovery on its
// timeline.
type killPoint struct {
	name string
	id   string
	// marker is in the task's description: its runs' model requests
	// carry it, and the fake models' turns For it are its own.
	marker string
	// at reports whether the task has reached its point.
	at func(s *runnerDev) bool
	// resumed reports whether its run goes on after the restart.
	resumed func(s *runnerDev) bool
	// recovers is set when a run was going at the kill: the timeline
	// names the dead worker's run.
	recovers bool
	// hold holds ampflow's git at the point (gitHolds): the words an
	// invocation holds on; none for a point of the CLI's.
	hold []string
	// then acts once the task runs, before its point is waited for.
	then func(s *runnerDev, id string)
	// status is the status the task ends in; "" is done.
	status task.Status
	// salvaged is the file the task's one salvage branch holds; "" is
	// no salvage branch.
	salvaged string
}

// TestRunnerKillMatrix brings three tasks, with the real Codex as
// executor and the real Claude Code as reviewer, each to a point of a
// runner's life, kills `ampflow dev` with SIGKILL once and restarts it:
//
//   - mid-tool-call: Codex runs a command (sleep) when the kill lands;
//   - review: Claude Code's model request is open;
//   - queued: the run waits for a runner slot, before its CLI starts;
//   - result commit: ampflow's commit of what Codex left uncommitted is
//     under way;
//   - worktree cleanup: the task is over and its checkout half removed;
//   - salvage: the task was cancelled mid-run, and the salvage of the
//     file Codex wrote is under way.
//
// The last three hold ampflow's own git there (gitHolds), so the kill
// lands on them.
//
// After the restart every task ends as it would have without the kill:
// one task_result and one verdict each (none for the cancelled one), no
// second round, the branch has the agent's commit, no process of a run
// is left at the kill or after, no salvage branch but the cancelled
// task's one with the agent's draft, the timeline names the recovery
// where a run was going, and the branch lease is free within 10 s of the
// end. The other points of the
// issue's matrix have their own tests: a parked run
// (TestToolParkClaude, kill: true), a run mid model request
// (TestRunnerKill9Resumes), between push and pull request
// (TestPullRequestKilledBeforeOpening).
func TestRunnerKillMatrix(t *testing.T) {
	approve := `Looks right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "hello.txt reads hello"}]}`
	done := func(For string) fakemodel.Turn {
		return fakemodel.Turn{For: For, Text: `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt"}`}
	}
	commit := func(For string) fakemodel.Turn {
		c := codexCommit("hello", "add hello.txt")
		c.For = For
		return c
	}
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	holds := gitHolds(t)
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"codex", []fakemodel.Turn{
			// Drafts a file, then waits in a command until cancelled.
			{For: "kill-salvage", Text: "Drafting.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "printf 'draft\\n' > draft.txt && sleep 599"}}},
			commit("kill-cleanup"), done("kill-cleanup"),
			// Leaves its file for ampflow to commit; a resumed session
			// reports again.
			{For: "kill-commit", Text: "Writing the file.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "printf 'hello\\n' > hello.txt"}}},
			done("kill-commit"), done("kill-commit"),
			{For: "kill-tool", Text: "Waiting on the service.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "sleep 600"}}},
			// The resumed session goes on: the command did not finish.
			commit("kill-tool"), done("kill-tool"),
			commit("kill-review"), done("kill-review"),
			commit("kill-queued"), done("kill-queued"),
		}},
		reviewer: runner{"claude", []fakemodel.Turn{
			{For: "kill-cleanup", Text: approve},
			{For: "kill-commit", Text: approve},
			{For: "kill-review", Hold: held}, // open when the kill lands
			{For: "kill-review", Text: approve},
			{For: "kill-tool", Text: approve},
			{For: "kill-queued", Text: approve},
		}},
		env: []string{"AMPFLOW_RUNNER_SLOTS=3", "PATH=" + holds.bin + string(os.PathListSeparator) + os.Getenv("PATH")},
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dev's output:\n%s", s.p.output())
		}
	})
	served := func(m *fakemodel.Server, For string, n int) func(*runnerDev) bool {
		return func(*runnerDev) bool {
			got := 0
			for _, r := range m.AgentRequests() {
				if r.Text(For) {
					got++
				}
			}
			return got >= n
		}
	}
	running := func(cmd string) func(*runnerDev) bool {
		return func(*runnerDev) bool {
			for _, p := range agentProcs(t, s.p.dataDir) {
				if strings.Contains(p, cmd) {
					return true
				}
			}
			return false
		}
	}
	queued := func(s *runnerDev) bool {
		var f fleet.Response
		s.api.call("GET", "/v1/fleet", nil, &f)
		return len(f.Hosts) == 1 && len(f.Hosts[0].Queue) == 1 && f.Hosts[0].Queue[0].TaskID == "T-2026-973"
	}
	checkout := func(id string) string { return activities.WorktreeDir(s.p.dataDir, id, amp.RoleExecutor) }
	gone := func(id string) func(*runnerDev) bool {
		return func(*runnerDev) bool {
			_, err := os.Stat(checkout(id))
			return os.IsNotExist(err)
		}
	}
	plans := map[string]amp.TaskDispatch{}
	branched := func(id string) func(*runnerDev) bool {
		return func(*runnerDev) bool {
			return exec.Command("git", "-C", plans[id].Repo, "rev-parse", "--verify", "-q", runnerpkg.SalvageRef(id, 1)).Run() == nil
		}
	}
	cancel := func(s *runnerDev, id string) {
		eventually(t, 2*time.Minute, id+" drafting", func() (bool, error) {
			return running("sleep 599")(s), fmt.Errorf("%s", pendingNote(s.api.state(id)))
		})
		if code, body := s.api.call("POST", "/v1/tasks/"+id+"/cancel", httpapi.CancelRequest{Reason: "the kill matrix cancels it"}, nil); code != http.StatusOK {
			t.Fatalf("cancelling %s: %d %s", id, code, body)
		}
	}
	points := []killPoint{
		{name: "salvage", id: "T-2026-976", marker: "kill-salvage", hold: []string{"update-ref", "ampflow/salvage/T-2026-976/"}, then: cancel,
			resumed: branched("T-2026-976"), status: task.StatusTerminated, salvaged: "draft.txt"},
		// The checkout is marked, half removed, when the kill lands.
		{name: "cleanup", id: "T-2026-975", marker: "kill-cleanup", hold: []string{"worktree prune",
			"has " + filepath.Join(checkout("T-2026-975"), ".git"), "gone " + activities.WorktreeDir(s.p.dataDir, "T-2026-975", amp.RoleReviewer),
			"empty " + checkout("T-2026-975")}, resumed: gone("T-2026-975")},
		{name: "result-commit", id: "T-2026-974", marker: "kill-commit", hold: []string{"commit what the executor left uncommitted", "in T-2026-974"},
			resumed: served(s.reviewer, "kill-commit", 1), recovers: true},
		{name: "review", id: "T-2026-972", marker: "kill-review", at: served(s.reviewer, "kill-review", 1), resumed: served(s.reviewer, "kill-review", 2), recovers: true},
		// Late: Codex gives the model a command's output after 10 s,
		// running or not.
		{name: "mid-tool-call", id: "T-2026-971", marker: "kill-tool", at: running("sleep 600"), resumed: served(s.executor, "kill-tool", 2), recovers: true},
		{name: "queued", id: "T-2026-973", marker: "kill-queued", at: queued, resumed: served(s.executor, "kill-queued", 1), recovers: true},
	}
	for _, p := range points {
		// Each task has a repository of its own: a git held in one holds
		// the others' checkouts of it.
		plan, _ := acpPlan(t, "feature/kill-"+p.name)
		plan.Description = "Add a greeting (" + p.marker + ")"
		plans[p.id] = plan
		at := p.at
		if p.hold != nil {
			at = holds.hold(p.name, p.hold...)
		}
		s.api.startTask(p.id, plan)
		if p.then != nil {
			p.then(s, p.id)
		}
		eventually(t, 2*time.Minute, p.name+": "+p.id+" at its point", func() (bool, error) {
			return at(s), fmt.Errorf("%s", pendingNote(s.api.state(p.id)))
		})
	}

	// The branch leases are listed while the tasks run, so that their
	// absence after done means they were released.
	leased := func(plan amp.TaskDispatch) (bool, string) {
		key := activities.BranchKey(plan.Repo, plan.Branch)
		var l repomesh.LeaseList
		s.api.call("GET", "/v1/leases?limit=500", nil, &l)
		for _, x := range l.Leases {
			if x.ResourceKey == key && x.State == "active" {
				return true, x.LeaseID
			}
		}
		return false, ""
	}
	if ok, _ := leased(plans["T-2026-971"]); !ok {
		t.Fatalf("the branch lease of T-2026-971 is not listed while it runs")
	}

	s.p.kill()
	eventually(t, 5*time.Second, "no process of a run left after the kill", func() (bool, error) {
		ps := agentProcs(t, s.p.dataDir)
		return len(ps) == 0, fmt.Errorf("still running: %v", ps)
	})
	s.p.restart()
	restarted := time.Now()
	s.api.reset()

	resumedIn := map[string]time.Duration{}
	eventually(t, 60*time.Second, "every run going again after the restart", func() (bool, error) {
		for _, p := range points {
			if _, ok := resumedIn[p.name]; !ok && p.resumed(s) {
				resumedIn[p.name] = time.Since(restarted).Round(10 * time.Millisecond)
			}
		}
		return len(resumedIn) == len(points), fmt.Errorf("resumed: %v", resumedIn)
	})
	for _, p := range points {
		t.Logf("%-14s restart to run going again: %s", p.name, resumedIn[p.name])
	}

	for _, p := range points {
		want := p.status
		if want == "" {
			want = task.StatusDone
		}
		st := s.api.waitFor(p.id, string(want), 3*time.Minute, func(st task.State) bool { return st.Status.Terminal() })
		endedAt := time.Now()
		if st.Status != want {
			t.Errorf("%s: status %s (%s), want %s", p.name, st.Status, st.LastError, want)
			continue
		}
		if st.Rounds != 1 || st.RejectCount != 0 {
			t.Errorf("%s: %d rounds, %d rejections; want 1 and 0: a crash must not dispatch again", p.name, st.Rounds, st.RejectCount)
		}
		results := 0
		if want == task.StatusDone {
			results = 1
			if got := git(t, plans[p.id].Repo, "show", plans[p.id].Branch+":hello.txt"); got != "hello" {
				t.Errorf("%s: hello.txt on %s = %q", p.name, plans[p.id].Branch, got)
			}
		}
		counts := map[string]int{}
		for _, r := range ssotHistory(t, s.p.dataDir, p.id) {
			counts[recordKey(r)]++
		}
		if counts[string(amp.TypeTaskResult)] != results || counts[string(amp.TypeReviewVerdict)] != results {
			t.Errorf("%s: %d task_result and %d review_verdict records, want %d each", p.name, counts[string(amp.TypeTaskResult)], counts[string(amp.TypeReviewVerdict)], results)
		}
		named := false
		for _, e := range st.Timeline {
			named = named || strings.Contains(e.Note, "died")
		}
		if named != p.recovers {
			t.Errorf("%s: the timeline names a dead run: %v, want %v: %+v", p.name, named, p.recovers, st.Timeline)
		}
		eventually(t, 10*time.Second-time.Since(endedAt), p.name+": the branch lease free after the task ended", func() (bool, error) {
			ok, id := leased(plans[p.id])
			return !ok, fmt.Errorf("lease %s still active", id)
		})
		salvage := git(t, plans[p.id].Repo, "branch", "--list", "ampflow/salvage/"+p.id+"/*")
		switch {
		case p.salvaged == "" && salvage != "":
			t.Errorf("%s: salvage branches %s: none is the agent's", p.name, salvage)
		case p.salvaged != "" && strings.TrimSpace(salvage) != runnerpkg.SalvageRef(p.id, 1):
			t.Errorf("%s: salvage branches %q, want %s alone", p.name, salvage, runnerpkg.SalvageRef(p.id, 1))
		case p.salvaged != "":
			if got := git(t, plans[p.id].Repo, "show", runnerpkg.SalvageRef(p.id, 1)+":"+p.salvaged); got != "draft" {
				t.Errorf("%s: %s on the salvage branch = %q, want the agent's draft", p.name, p.salvaged, got)
			}
		}
	}
	if ps := agentProcs(t, s.p.dataDir); len(ps) != 0 {
		t.Errorf("processes left after the tasks ended: %v", ps)
	}
}

// gitHold is a directory of the holds of the git that `ampflow dev` runs
// (bin, first on its PATH): a git there runs /usr/bin/git unless its
// words hold it.
type gitHold struct {
	t   *testing.T
	bin string
}

// gitHolds puts a git in front of the real one that holds an invocation
// that has every word of a hold: "in X", X in its working directory;
// "has X" and "gone X", a path there or not; "empty X" says what to do
// when held (below); any other word is in its arguments. A held git
// removes what is in the directories an "empty" names but their .git, as
// ampflow does before it is killed removing a checkout; marks the hold
// reached; waits until the process that ran it is gone, as it is after a
// kill; and exits as killed, having done nothing else. A hold holds
// once: the same invocation after the restart runs.
func gitHolds(t *testing.T) *gitHold {
	t.Helper()
	h := &gitHold{t: t, bin: t.TempDir()}
	script := `#!/bin/sh
holds=` + h.bin + `
parent=$PPID
for f in "$holds"/*.hold; do
	[ -e "$f" ] || continue
	all=1
	while IFS= read -r w; do
		case "$w" in
		"in "*) case "$(pwd)" in *"${w#in }"*) ;; *) all=0 ;; esac ;;
		"has "*) [ -e "${w#has }" ] || all=0 ;;
		"gone "*) [ ! -e "${w#gone }" ] || all=0 ;;
		"empty "*) ;;
		*) case " $* " in *"$w"*) ;; *) all=0 ;; esac ;;
		esac
	done < "$f"
	[ $all = 1 ] || continue
	while IFS= read -r w; do
		case "$w" in
		"empty "*) /usr/bin/find "${w#empty }" -mindepth 1 -maxdepth 1 ! -name .git -exec /bin/rm -rf {} + ;;
		esac
	done < "$f"
	/bin/rm -f "$f"
	: > "${f%.hold}.reached"
	while kill -0 "$parent" 2>/dev/null; do /bin/sleep 0.05; done
	exit 137
done
exec /usr/bin/git "$@"
`
	if err := os.WriteFile(filepath.Join(h.bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

// hold holds the invocations with all of words under name, and reports
// whether one reached it.
func (h *gitHold) hold(name string, words ...string) func(*runnerDev) bool {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.bin, name+".hold"), []byte(strings.Join(words, "\n")+"\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return func(*runnerDev) bool {
		_, err := os.Stat(filepath.Join(h.bin, name+".reached"))
		return err == nil
	}
}
