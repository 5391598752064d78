package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
)

// agentBin is an agent CLI installed by .ci/agents.sh (or under
// AMPFLOW_AGENTS_BIN); the test skips without it unless
// AMPFLOW_TEST_AGENTS=1.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("AMPFLOW_AGENTS_BIN")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", ".cache", "agents", "node_modules", ".bin")
	}
	bin, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("AMPFLOW_TEST_AGENTS") == "1" {
			t.Fatalf("%s is not installed in %s (run .ci/agents.sh)", name, dir)
		}
		t.Skipf("%s is not installed in %s (run .ci/agents.sh, or set AMPFLOW_AGENTS_BIN)", name, dir)
	}
	return bin
}

// runnerSetup is `ampflow dev` with the real Codex CLI as executor and the
// real Claude Code CLI as reviewer, each against a loopback fake of its
// model API, and a repository whose own checkout is on main.
type runnerSetup struct {
	codex, claude *fakemodel.Server
	p             *devProc
	api           *apiClient
	data, repo    string
}

// runnerKey is the model API key the CLIs are given; it must reach no log.
const runnerKey = "sk-runner-e2e-secret"

// codexHomes makes a HOME and, in it, a CODEX_HOME whose config.toml
// points Codex at the fake Responses API at modelURL, its key read from
// FAKE_OPENAI_KEY.
func codexHomes(t *testing.T, modelURL string) (home, codexHome string) {
	t.Helper()
	home = t.TempDir()
	codexHome = filepath.Join(home, "codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
env_key = "FAKE_OPENAI_KEY"
wire_api = "responses"
`, modelURL))
	return home, codexHome
}

func startRunners(t *testing.T, codexTurns, claudeTurns []fakemodel.Turn, env ...string) *runnerSetup {
	t.Helper()
	codexBin, claudeBin := agentBin(t, "codex"), agentBin(t, "claude")
	s := &runnerSetup{codex: fakemodel.New(codexTurns...), claude: fakemodel.New(claudeTurns...)}
	t.Cleanup(s.codex.Close)
	t.Cleanup(s.claude.Close)

	home, codexHome := codexHomes(t, s.codex.URL())
	s.data = t.TempDir()
	s.p = startDev(t, s.data, append([]string{
		"AMPFLOW_AGENTS_EXECUTOR_MODE=runner", "AMPFLOW_AGENTS_EXECUTOR_RUNNER=codex",
		"AMPFLOW_AGENTS_EXECUTOR_COMMAND=" + codexBin, "AMPFLOW_AGENTS_EXECUTOR_MODEL=gpt-5.5",
		"AMPFLOW_AGENTS_EXECUTOR_ENV=HOME=" + home + ",CODEX_HOME=" + codexHome + ",FAKE_OPENAI_KEY",
		"AMPFLOW_AGENTS_REVIEWER_MODE=runner", "AMPFLOW_AGENTS_REVIEWER_RUNNER=claude",
		"AMPFLOW_AGENTS_REVIEWER_COMMAND=" + claudeBin,
		"AMPFLOW_AGENTS_REVIEWER_ENV=HOME=" + home + ",ANTHROPIC_BASE_URL=" + s.claude.URL() + ",ANTHROPIC_API_KEY,IS_SANDBOX=1",
		"FAKE_OPENAI_KEY=" + runnerKey, "ANTHROPIC_API_KEY=" + runnerKey}, env...)...)
	s.repo = gitRepo(t)
	git(t, s.repo, "checkout", "-q", "main") // the user's checkout stays on main
	s.api = newAPIClient(t, s.p.api, "")
	t.Cleanup(func() {
		if strings.Contains(s.p.output(), runnerKey) {
			t.Error("the model API key reached dev's log")
		}
	})
	return s
}

// ended waits until the task is done, terminated or waits for an admin.
func (s *runnerSetup) ended(id string) task.State {
	return s.api.waitFor(id, "done", 5*time.Minute, func(st task.State) bool {
		return st.Status == task.StatusDone || st.Status == task.StatusAwaitingAdmin || st.Status == task.StatusTerminated
	})
}

// checkClean asserts that the task left nothing behind: no worktree, no
// change in the user's checkout, which is still on main.
func (s *runnerSetup) checkClean(t *testing.T, id string) {
	t.Helper()
	if head := git(t, s.repo, "rev-parse", "--abbrev-ref", "HEAD"); head != "main" {
		t.Errorf("the user's checkout moved to %s", head)
	}
	if status := git(t, s.repo, "status", "--porcelain"); status != "" {
		t.Errorf("the user's checkout changed:\n%s", status)
	}
	if _, err := os.Stat(filepath.Join(s.repo, "hello.txt")); err == nil {
		t.Error("the executor wrote into the user's checkout")
	}
	// The worktrees go as the task ends, just after its status says so.
	for _, dir := range []string{filepath.Join(s.data, "worktrees", id), filepath.Join(s.data, "worktrees", id+"-review")} {
		deadline := time.Now().Add(60 * time.Second)
		for _, err := os.Stat(dir); !os.IsNotExist(err); _, err = os.Stat(dir) {
			if time.Now().After(deadline) {
				t.Errorf("worktree %s is still there a minute after the task ended (%v); timeline: %+v", dir, err, s.api.state(id).Timeline)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if wts := git(t, s.repo, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Errorf("git still lists the task's worktrees:\n%s", wts)
	}
}

// codexCommit is a Codex tool call that writes hello.txt and commits it.
func codexCommit(text, msg string) fakemodel.Turn {
	return fakemodel.Turn{Text: "Writing the file.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{
		"cmd": "printf '" + text + "\\n' > hello.txt && git add hello.txt && git -c user.name=codex -c user.email=codex@example.com commit -qm '" + msg + "'"}}}
}

// TestRunnerTask runs a task from start to done with the real Codex CLI as
// executor and the real Claude Code CLI as reviewer, each against a
// loopback fake of its model API: Codex commits a file in the task's
// worktree, ampflow reads the result from git, Claude Code approves it,
// the worktrees go, and the user's own checkout is left as it was.
func TestRunnerTask(t *testing.T) {
	s := startRunners(t,
		[]fakemodel.Turn{
			codexCommit("hello", "add hello.txt"),
			{Text: `Done. {"criteria_met": [true], "notes": ["hello.txt added"], "summary": "wrote hello.txt"}`},
		},
		[]fakemodel.Turn{
			{Text: `Looks right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "hello.txt reads hello"}]}`},
		})
	out := s.p.output()
	if !strings.Contains(out, "executor   runner codex") || !strings.Contains(out, "reviewer   runner claude") {
		t.Errorf("dev did not say which runners it checked:\n%s", out)
	}
	const id = "T-2026-881"
	s.api.startTask(id, lowRiskPlan(s.repo))
	if st := s.ended(id); st.Status != task.StatusDone {
		t.Fatalf("task %s: status %s (%s), want done\n%s", id, st.Status, st.LastError, s.p.output())
	}

	commit := git(t, s.repo, "rev-parse", "feature/e2e")
	if got := git(t, s.repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
	s.checkClean(t, id)
	if b := git(t, s.repo, "branch", "--list", "ampflow/salvage/*"); b != "" {
		t.Errorf("salvage branches with nothing left uncommitted: %s", b)
	}
	// The tool's output reached the model, and the reviewer was told the
	// commit it reviewed.
	if reqs := s.codex.AgentRequests(); len(reqs) < 2 {
		t.Errorf("codex made %d model requests, want the tool result sent back", len(reqs))
	}
	reviewed := false
	for _, r := range s.claude.AgentRequests() {
		reviewed = reviewed || r.Text(commit)
	}
	if !reviewed {
		t.Error("the reviewer's prompt did not name the result commit")
	}
}
