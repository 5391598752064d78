package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// agentProcs lists the processes working under dir (their working
// directory is in it): a runner's CLI and the hooks it runs.
func agentProcs(t *testing.T, dir string) []string {
	t.Helper()
	dir, _ = filepath.EvalSymlinks(dir)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// parkCase is one CLI's run of the parked-approval test.
type parkCase struct {
	id string
	// cli is the executor's runner.
	cli   string
	turns func(curl string) []fakemodel.Turn
	// resumed is the index of the first agent request of the resumed run.
	resumed int
	kill    bool
	// before is how many calls the policy allowed ahead of the parked one.
	before int
	// check, when set, checks the task's repository after the result.
	check func(t *testing.T, repo string)
}

// testParkedApproval runs a task whose executor asks to curl, with
// tools.ask_timeout at 2s: nobody answers in time, so the run is parked
// (no process left); with kill set, ampflow dev is killed with SIGKILL
// and restarted while it is parked. The admin then approves over the API:
// the run resumes its session, the call runs once, the task gets its
// result, and each tool call is recorded once.
func testParkedApproval(t *testing.T, c parkCase) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "pong")
	}))
	t.Cleanup(target.Close)
	// The target is in sandbox.network.allow: the ask parked here is
	// the command's, not its destination's.
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{c.cli, c.turns("curl -s " + target.URL + "/ > pong.txt")},
		env: []string{"AMPFLOW_TOOLS_ASK_TIMEOUT=2s", "AMPFLOW_SANDBOX_NETWORK_ALLOW=" + strings.TrimPrefix(target.URL, "http://")}})
	p, model, ops, repo, data := s.p, s.executor, s.api, s.repo, s.p.dataDir
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ampflow dev:\n%s", p.output())
		}
	})
	s.planner.startTask(c.id, lowRiskPlan(repo))
	state := func() (task.State, error) {
		var st task.State
		if code, b := ops.call("GET", "/v1/tasks/"+c.id, nil, &st); code != http.StatusOK {
			return st, fmt.Errorf("%d %s", code, b)
		}
		return st, nil
	}
	parked := func(st task.State) bool {
		for _, e := range st.Timeline {
			if e.Kind == "parked" {
				return true
			}
		}
		return false
	}
	var d decision.Decision
	eventually(t, 3*time.Minute, "the run parked on a tool_call decision", func() (bool, error) {
		st, err := state()
		if err != nil {
			return false, err
		}
		if st.Pending != nil && st.Pending.Kind == task.KindToolCall && parked(st) {
			d = *st.Pending
			return true, nil
		}
		return false, fmt.Errorf("status %s, pending %v, last error %q", st.Status, st.Pending != nil, st.LastError)
	})
	// Parked: no process of the run is left, nothing ran, and the ask
	// stays open past ask_timeout.
	eventually(t, 30*time.Second, "no process of the parked run", func() (bool, error) {
		ps := agentProcs(t, data)
		return len(ps) == 0, fmt.Errorf("still running: %v", ps)
	})
	if hits.Load() != 0 {
		t.Error("curl ran before the admins answered")
	}
	if d.ExpiresAt.Sub(d.RaisedAt) < time.Hour {
		t.Errorf("the ask expires at %s, raised %s: want tools.park_timeout past ask_timeout", d.ExpiresAt, d.RaisedAt)
	}
	served := model.Served()

	if c.kill {
		p.kill()
		t.Log("ampflow dev killed with SIGKILL while the run is parked; restarting")
		p.restart()
		restarted := time.Now()
		eventually(t, 90*time.Second, "the task answering after the restart", func() (bool, error) {
			st, err := state()
			return err == nil && st.Pending != nil && st.Pending.ID == d.ID, err
		})
		t.Logf("restart to the parked call's decision open again: %s", time.Since(restarted).Round(10*time.Millisecond))
		if ps := agentProcs(t, data); len(ps) != 0 {
			t.Errorf("processes after the restart, before the answer: %v", ps)
		}
		if model.Served() != served {
			t.Errorf("the model was asked %d more times while parked", model.Served()-served)
		}
	}

	ops.decide(d, task.OptAllowOnce)
	var st task.State
	eventually(t, 3*time.Minute, "the executor's result", func() (bool, error) {
		var err error
		st, err = state()
		return err == nil && st.Underlying() != task.StatusDispatched && st.Underlying() != task.StatusInProgress, fmt.Errorf("status %s", st.Status)
	})
	if hits.Load() != 1 {
		t.Errorf("curl reached the target %d times after the approval, want 1", hits.Load())
	}
	if got := git(t, repo, "show", "feature/e2e:pong.txt"); got != "pong" {
		t.Errorf("pong.txt on the branch = %q (status %s, %s)", got, st.Status, st.LastError)
	}
	if c.check != nil {
		c.check(t, repo)
	}
	// The resumed run went on with the same conversation.
	reqs := model.AgentRequests()
	if len(reqs) <= c.resumed || !reqs[c.resumed].Text("Checking the service.") {
		t.Errorf("the resumed run's first request does not carry the conversation (%d requests)", len(reqs))
	}
	calls := ops.toolCalls(c.id)
	if len(calls) != 2+c.before {
		t.Fatalf("%d tool calls, want %d (%d before, the curl once, the commit): %+v", len(calls), 2+c.before, c.before, calls)
	}
	if c := calls[c.before]; c.Decision != task.ToolAllow || c.By != "ops" || c.Option != task.OptAllowOnce || !strings.Contains(c.Input, "curl") {
		t.Errorf("the parked call: %+v", c)
	}
	if ps := agentProcs(t, data); len(ps) != 0 {
		t.Errorf("processes left after the result: %v", ps)
	}
}

// TestToolParkClaude parks a Claude Code run (its hook's "defer"), kills
// ampflow dev with SIGKILL while it is parked, restarts it, and approves:
// --resume runs the deferred call through the hook again, which finds it
// allowed.
func TestToolParkClaude(t *testing.T) {
	bash := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run it"}}
	}
	testParkedApproval(t, parkCase{
		id: "T-2026-947", cli: "claude", kill: true, resumed: 1,
		turns: func(curl string) []fakemodel.Turn {
			return []fakemodel.Turn{
				{Text: "Checking the service.", Tool: bash(curl)},
				// The resumed run: the deferred call ran, then the commit.
				{Text: "Committing.", Tool: bash("git add pong.txt && git -c user.name=claude -c user.email=claude@example.com commit -qm 'add pong.txt'")},
				{Text: "Committed."},
				// Then the resume prompt's turn.
				{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "fetched pong.txt"}`},
			}
		},
	})
}

// TestToolParkCodex parks a Codex run (the runner stops it once the hook
// parks the call) and approves: `exec resume` tells the agent, which
// makes the call again, and the hook finds it allowed.
func TestToolParkCodex(t *testing.T) {
	exec := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
	}
	testParkedApproval(t, parkCase{
		id: "T-2026-948", cli: "codex", resumed: 1,
		turns: func(curl string) []fakemodel.Turn {
			return []fakemodel.Turn{
				{Text: "Checking the service.", Tool: exec(curl)},
				// The resumed run, told the call is allowed, makes it again.
				{Text: "Approved; running it again.", Tool: exec(curl)},
				{Text: "Committing.", Tool: exec("git add pong.txt && git -c user.name=codex -c user.email=codex@example.com commit -qm 'add pong.txt'")},
				{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "fetched pong.txt"}`},
			}
		},
	})
}

// TestToolParkClaudeTwoCalls parks a Claude Code run whose message holds
// two tool calls, the second asked: Claude Code ignores a defer beside
// another call, so the hook holds the call and the runner stops the CLI.
// The first call ran once, the asked one not before the approval; the
// resumed session makes it again and it runs once.
func TestToolParkClaudeTwoCalls(t *testing.T) {
	bash := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run it"}}
	}
	testParkedApproval(t, parkCase{
		id: "T-2026-950", cli: "claude", resumed: 1, before: 1,
		turns: func(curl string) []fakemodel.Turn {
			return []fakemodel.Turn{
				{Text: "Checking the service.", Tool: bash("echo ready >> ready.txt"), More: []*fakemodel.ToolCall{bash(curl)}},
				// The resumed run, told the call is allowed, makes it again.
				{Text: "Approved; running it again.", Tool: bash(curl)},
				{Text: "Committing.", Tool: bash("git add pong.txt ready.txt && git -c user.name=claude -c user.email=claude@example.com commit -qm 'add pong.txt'")},
				{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "fetched pong.txt"}`},
			}
		},
		check: func(t *testing.T, repo string) {
			if got := git(t, repo, "show", "feature/e2e:ready.txt"); got != "ready" {
				t.Errorf("ready.txt on the branch = %q: the first call did not run once", got)
			}
		},
	})
}

// TestToolParkOpenCode parks an OpenCode run (the runner stops its process
// group once the plugin's hook, given AMPFLOW_PARK_FILE in OpenCode's
// environment, parks the call) and approves: --session resumes it, the
// agent makes the call again, and the hook finds it allowed.
func TestToolParkOpenCode(t *testing.T) {
	bash := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": cmd, "description": "run it"}}
	}
	testParkedApproval(t, parkCase{
		id: "T-2026-949", cli: "opencode", resumed: 1,
		turns: func(curl string) []fakemodel.Turn {
			return []fakemodel.Turn{
				{Text: "Checking the service.", Tool: bash(curl)},
				// The resumed run, told the call is allowed, makes it again.
				{Text: "Approved; running it again.", Tool: bash(curl)},
				{Text: "Committing.", Tool: bash("git add pong.txt && git -c user.name=opencode -c user.email=opencode@example.com commit -qm 'add pong.txt'")},
				{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "fetched pong.txt"}`},
			}
		},
	})
}
