package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/fleet"
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
}

// TestRunnerKillMatrix brings three tasks, with the real Codex as
// executor and the real Claude Code as reviewer, each to a point of a
// runner's life, kills `ampflow dev` with SIGKILL once and restarts it:
//
//   - mid-tool-call: Codex runs a command (sleep) when the kill lands;
//   - review: Claude Code's model request is open;
//   - queued: the run waits for a runner slot, before its CLI starts.
//
// After the restart every task reaches done as it would have without the
// kill: one task_result and one verdict each, no second round, the
// branch has the agent's commit, no process of a run is left at the
// kill or after, no salvage branch, the timeline names the recovery, and
// the branch lease is free within 10 s of done. The other points of the
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
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"codex", []fakemodel.Turn{
			{For: "kill-tool", Text: "Waiting on the service.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "sleep 600"}}},
			// The resumed session goes on: the command did not finish.
			commit("kill-tool"), done("kill-tool"),
			commit("kill-review"), done("kill-review"),
			commit("kill-queued"), done("kill-queued"),
		}},
		reviewer: runner{"claude", []fakemodel.Turn{
			{For: "kill-review", Hold: held}, // open when the kill lands
			{For: "kill-review", Text: approve},
			{For: "kill-tool", Text: approve},
			{For: "kill-queued", Text: approve},
		}},
		env: []string{"AMPFLOW_RUNNER_SLOTS=2"},
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
	sleeping := func(*runnerDev) bool {
		for _, p := range agentProcs(t, s.p.dataDir) {
			if strings.Contains(p, "sleep 600") {
				return true
			}
		}
		return false
	}
	queued := func(s *runnerDev) bool {
		var f fleet.Response
		s.api.call("GET", "/v1/fleet", nil, &f)
		return len(f.Hosts) == 1 && len(f.Hosts[0].Queue) == 1 && f.Hosts[0].Queue[0].TaskID == "T-2026-973"
	}
	points := []killPoint{
		{name: "mid-tool-call", id: "T-2026-971", marker: "kill-tool", at: sleeping, resumed: served(s.executor, "kill-tool", 2), recovers: true},
		{name: "review", id: "T-2026-972", marker: "kill-review", at: served(s.reviewer, "kill-review", 1), resumed: served(s.reviewer, "kill-review", 2), recovers: true},
		{name: "queued", id: "T-2026-973", marker: "kill-queued", at: queued, resumed: served(s.executor, "kill-queued", 1), recovers: true},
	}
	plans := map[string]amp.TaskDispatch{}
	for _, p := range points {
		plan := lowRiskPlan(s.repo)
		plan.Description, plan.Branch = "Add a greeting ("+p.marker+")", "feature/kill-"+p.name
		git(t, s.repo, "branch", plan.Branch)
		plans[p.id] = plan
		s.api.startTask(p.id, plan)
		eventually(t, 2*time.Minute, p.name+": "+p.id+" at its point", func() (bool, error) {
			return p.at(s), fmt.Errorf("%s", pendingNote(s.api.state(p.id)))
		})
	}

	// The branch leases are listed while the tasks run, so that their
	// absence after done means they were released.
	leased := func(branch string) (bool, string) {
		key := activities.BranchKey(s.repo, branch)
		var l repomesh.LeaseList
		s.api.call("GET", "/v1/leases?limit=500", nil, &l)
		for _, x := range l.Leases {
			if x.ResourceKey == key && x.State == "active" {
				return true, x.LeaseID
			}
		}
		return false, ""
	}
	if ok, _ := leased(plans[points[0].id].Branch); !ok {
		t.Fatalf("the branch lease of %s is not listed while it runs", points[0].id)
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
		st := s.api.done(p.id, 3*time.Minute)
		doneAt := time.Now()
		if st.Rounds != 1 || st.RejectCount != 0 {
			t.Errorf("%s: %d rounds, %d rejections; want 1 and 0: a crash must not dispatch again", p.name, st.Rounds, st.RejectCount)
		}
		if got := git(t, s.repo, "show", plans[p.id].Branch+":hello.txt"); got != "hello" {
			t.Errorf("%s: hello.txt on %s = %q", p.name, plans[p.id].Branch, got)
		}
		counts := map[string]int{}
		for _, r := range ssotHistory(t, s.p.dataDir, p.id) {
			counts[recordKey(r)]++
		}
		if counts[string(amp.TypeTaskResult)] != 1 || counts[string(amp.TypeReviewVerdict)] != 1 {
			t.Errorf("%s: %d task_result and %d review_verdict records, want one each", p.name, counts[string(amp.TypeTaskResult)], counts[string(amp.TypeReviewVerdict)])
		}
		named := false
		for _, e := range st.Timeline {
			named = named || strings.Contains(e.Note, "died")
		}
		if named != p.recovers {
			t.Errorf("%s: the timeline names a dead run: %v, want %v: %+v", p.name, named, p.recovers, st.Timeline)
		}
		eventually(t, 10*time.Second-time.Since(doneAt), p.name+": the branch lease free after done", func() (bool, error) {
			ok, id := leased(plans[p.id].Branch)
			return !ok, fmt.Errorf("lease %s still active", id)
		})
	}
	if b := git(t, s.repo, "branch", "--list", "ampflow/salvage/*"); b != "" {
		t.Errorf("salvage branches after the kill: %s", b)
	}
	if ps := agentProcs(t, s.p.dataDir); len(ps) != 0 {
		t.Errorf("processes left after the tasks ended: %v", ps)
	}
}
