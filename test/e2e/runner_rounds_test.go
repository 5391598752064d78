package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// The reviewer's issue in the rejection round, as the executor must see it.
const helloIssue = "hello.txt says helo, not hello"

// TestRunnerRejectionResumes: the Claude Code reviewer rejects the first
// result with an issue; the Codex executor is dispatched again and its
// run resumes the session of the first, with the issue in its prompt; it
// fixes the file and the reviewer approves.
func TestRunnerRejectionResumes(t *testing.T) {
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"codex", []fakemodel.Turn{
			codexCommit("helo", "add hello.txt"),
			{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "first-round report"}`},
			codexCommit("hello", "fix the greeting"),
			{Text: `Fixed. {"criteria_met": [true], "notes": [], "summary": "fixed the greeting"}`},
		}},
		reviewer: runner{"claude", []fakemodel.Turn{
			{Text: `Not yet. {"decision": "rejected", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": false, "evidence": "it says helo"}], ` +
				`"issues": [{"severity": "major", "file": "hello.txt", "line": 1, "description": "` + helloIssue + `", "suggested_fix": "write hello"}]}`},
			{Text: `Right now. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "it says hello"}]}`},
		}},
	})
	const id = "T-2026-882"
	s.api.startTask(id, lowRiskPlan(s.repo))
	st := s.ended(id)
	if st.Status != task.StatusDone {
		t.Fatalf("task %s: status %s (%s), want done\n%s", id, st.Status, st.LastError, s.p.output())
	}
	if st.Rounds != 2 || st.RejectCount != 1 {
		t.Errorf("%d rounds, %d rejections; want 2 and 1", st.Rounds, st.RejectCount)
	}
	if got := git(t, s.repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
	reqs := s.executor.AgentRequests()
	if len(reqs) != 4 {
		t.Fatalf("codex made %d model requests, want 4 (two per round)", len(reqs))
	}
	// The second round's first request carries the first round: the
	// session was resumed, not started again, and the issue reached it.
	second := reqs[2]
	if !second.Text("first-round report") || !second.Text("add hello.txt") {
		t.Errorf("the second round's request does not carry the first round's history:\n%.3000s", second.Body)
	}
	if !second.Text(helloIssue) {
		t.Errorf("the reviewer's issue did not reach the executor:\n%.3000s", second.Body)
	}
	if reqs[0].Text(helloIssue) {
		t.Error("the first round already had the issue: the test proves nothing")
	}
	s.checkClean(t, id)
}

// TestRunnerHungRun: Codex's model never answers; the idle watchdog kills
// the run, the admins get a delivery_failed decision that says so, no CLI
// process is left, and when the admin terminates the task its worktree
// goes, with the file the run left uncommitted kept on a salvage branch.
func TestRunnerHungRun(t *testing.T) {
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"codex", []fakemodel.Turn{
			{Text: "Drafting.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "printf 'draft\\n' > draft.txt"}}},
			{Hang: true},
		}},
		reviewer: runner{cli: "claude"},
		env:      []string{"AMPFLOW_AGENTS_EXECUTOR_IDLE_TIMEOUT=5s", "AMPFLOW_TOOLS_ASK_TIMEOUT=2s"},
	})
	const id = "T-2026-883"
	s.api.startTask(id, lowRiskPlan(s.repo))
	d := s.api.pending(id, task.KindDeliveryFailed, 60*time.Second)
	if !strings.Contains(d.Prompt, "stopped as hung") {
		t.Errorf("the delivery_failed decision does not say the run hung: %q", d.Prompt)
	}
	if s.executor.Served() != 2 {
		t.Errorf("codex was served %d turns, want 2 (the second hung)", s.executor.Served())
	}
	wt := filepath.Join(s.p.dataDir, "worktrees", id)
	if procs := procsIn(wt); len(procs) != 0 {
		t.Errorf("processes left in the worktree after the kill: %v", procs)
	}
	if left := pidFiles(t, s.p.dataDir); len(left) != 0 {
		t.Errorf("pid files left after the run: %v", left)
	}

	s.api.decide(d, task.OptTerminate)
	st := s.ended(id)
	if st.Status != task.StatusTerminated {
		t.Fatalf("task %s: status %s, want terminated", id, st.Status)
	}
	salvage := "ampflow/salvage/" + id + "/1"
	eventually(t, 60*time.Second, "the worktree removed", func() (bool, error) {
		_, err := os.Stat(wt)
		return os.IsNotExist(err), nil
	})
	if got := git(t, s.repo, "show", salvage+":draft.txt"); got != "draft" {
		t.Errorf("draft.txt on %s = %q", salvage, got)
	}
	if b := git(t, s.repo, "branch", "--list", "ampflow/salvage/*"); strings.Count(b, "\n") != 0 {
		t.Errorf("salvage branches %q, want only %s: the same work salvaged twice", b, salvage)
	}
	s.checkClean(t, id)
}

// TestRunnerKill9Resumes: `ampflow dev` is killed with SIGKILL while Codex
// waits for its model; the sandboxed run dies with it, the restarted
// worker clears its pid file, the retried delivery resumes Codex's
// session, and the task is done with its result recorded once.
func TestRunnerKill9Resumes(t *testing.T) {
	// Most of its time is the wait for the killed worker's activity to time
	// out; it runs beside the other tests that wait so.
	t.Parallel()
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"codex", []fakemodel.Turn{
			codexCommit("hello", "add hello.txt"),
			{Hang: true}, // the kill lands while this request is open
			{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt"}`},
		}},
		reviewer: runner{"claude", []fakemodel.Turn{
			{Text: `Looks right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "hello.txt reads hello"}]}`},
		}},
	})
	const id = "T-2026-884"
	s.api.startTask(id, lowRiskPlan(s.repo))
	eventually(t, 3*time.Minute, "codex waiting on its second model request", func() (bool, error) {
		return s.executor.Served() >= 2, nil
	})
	pids := pidFiles(t, s.p.dataDir)
	if len(pids) != 1 {
		t.Fatalf("pid files %v while codex runs, want one", pids)
	}
	orphan := pids[0]
	t.Cleanup(func() {
		if groupLives(orphan) { // the reaping failed: do not leave it running
			_ = syscall.Kill(-orphan, syscall.SIGKILL)
		}
	})

	// The run is sandboxed: it dies with the worker, kill -9 included,
	// with every process it started.
	s.p.kill()
	eventually(t, 2*time.Second, "the codex run gone with the killed worker", func() (bool, error) {
		return !groupLives(orphan), nil
	})
	s.p.restart()
	restarted := time.Now()
	s.api.reset()
	eventually(t, 30*time.Second, "the dead run's pid file gone", func() (bool, error) {
		return len(pidFiles(t, s.p.dataDir)) == 0 || pidFiles(t, s.p.dataDir)[0] != orphan, nil
	})
	// The restarted worker fails the dead worker's attempt at once (the
	// timeline names it, below): the run resumes in seconds. The bound
	// leaves room for a loaded two-core machine starting Codex again.
	eventually(t, 30*time.Second, "codex resumed after the restart", func() (bool, error) {
		return s.executor.Served() >= 3, nil
	})
	t.Logf("restart to run resumed: %s", time.Since(restarted).Round(10*time.Millisecond))

	st := s.ended(id)
	named := false
	for _, e := range st.Timeline {
		named = named || strings.Contains(e.Note, "the worker running the executor's run on") && strings.Contains(e.Note, "died")
	}
	if !named {
		t.Errorf("the timeline does not name the recovery: %+v", st.Timeline)
	}
	if st.Status != task.StatusDone {
		t.Fatalf("task %s: status %s (%s), want done\n%s", id, st.Status, st.LastError, s.p.output())
	}
	if st.Rounds != 1 {
		t.Errorf("%d rounds, want 1: a crash must not dispatch again", st.Rounds)
	}
	reqs := s.executor.AgentRequests()
	if len(reqs) != 3 {
		t.Fatalf("codex made %d model requests, want 3", len(reqs))
	}
	if !reqs[2].Text("add hello.txt") {
		t.Errorf("the run after the restart did not resume the session: its request lacks the first run's tool call:\n%.3000s", reqs[2].Body)
	}
	results := 0
	for _, r := range ssotHistory(t, s.p.dataDir, id) {
		if recordKey(r) == string(amp.TypeTaskResult) {
			results++
		}
	}
	if results != 1 {
		t.Errorf("%d task_result records, want 1", results)
	}
	if got := git(t, s.repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
	s.checkClean(t, id)
}

// pidFiles lists the process groups of the runs whose pid files are in
// data_dir/pids (not the attempt records beside them).
func pidFiles(t *testing.T, data string) []int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(data, "pids", "*.json"))
	var pids []int
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "attempt-") {
			continue
		}
		var pf struct {
			PID int `json:"pid"`
		}
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &pf)
		}
		if err != nil {
			t.Fatalf("pid file %s: %v", f, err)
		}
		pids = append(pids, pf.PID)
	}
	return pids
}

// groupLives reports whether a live (not zombie) process is in group pgid.
func groupLives(pgid int) bool {
	return len(scanProcs(func(pid int, state string, pgrp int) bool { return pgrp == pgid })) > 0
}

// procsIn lists the live processes whose working directory is dir or
// under it.
func procsIn(dir string) []int {
	dir = filepath.Clean(dir)
	return scanProcs(func(pid int, _ string, _ int) bool {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		return err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)))
	})
}

func scanProcs(match func(pid int, state string, pgrp int) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		if match(pid, f[0], pgrp) {
			out = append(out, pid)
		}
	}
	return out
}
