package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
)

// TestToolPolicy runs each agent CLI as executor against a fake model
// that force-pushes (not Codex), uses the network (not Gemini CLI), then
// commits, with the hook ampflow hands the CLI (Claude Code's and Codex's
// PreToolUse, Gemini CLI's BeforeTool in a system settings file,
// OpenCode's plugin): the force push is denied without asking (the
// reason reaches the model, the command does not run), curl is asked of
// the admins (approved over the API, it runs once), the commit runs, and
// every call is in the task's chain, made with the executor's own token,
// and listed by `ampflow task tools`.
func TestToolPolicy(t *testing.T) {
	for _, c := range []struct {
		name, cli, id string
		// tool is the CLI's shell tool call running cmd; recorded is the
		// tool's name in the chain.
		tool     func(cmd string) *fakemodel.ToolCall
		recorded string
		push     bool
		curl     bool
		// rootData runs dev on a root-owned data_dir, which Gemini CLI
		// reads its system settings from.
		rootData bool
		within   time.Duration
	}{{
		name: "Claude", cli: "claude", id: "T-2026-882", push: true, curl: true, within: 3 * time.Minute, recorded: "Bash",
		tool: func(cmd string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run it"}}
		},
	}, {
		name: "Codex", cli: "codex", id: "T-2026-884", curl: true, within: 3 * time.Minute, recorded: "Bash",
		tool: func(cmd string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
		},
	}, {
		name: "Gemini", cli: "gemini", id: "T-2026-885", push: true, rootData: true, within: 4 * time.Minute, recorded: "run_shell_command",
		tool: func(cmd string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "run_shell_command", Input: map[string]any{"command": cmd}}
		},
	}, {
		name: "OpenCode", cli: "opencode", id: "T-2026-886", push: true, curl: true, within: 4 * time.Minute, recorded: "bash",
		tool: func(cmd string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": cmd, "description": "run it"}}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			var hits atomic.Int32
			// At the machine's own address: the run's loopback is its own.
			target := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				hits.Add(1)
				fmt.Fprintln(w, "pong")
			}))
			ln, err := net.Listen("tcp", net.JoinHostPort(machineIPv4(t), "0"))
			if err != nil {
				t.Fatal(err)
			}
			target.Listener.Close()
			target.Listener = ln
			target.Start()
			t.Cleanup(target.Close)
			var turns []fakemodel.Turn
			if c.push {
				turns = append(turns, fakemodel.Turn{Text: "Pushing.", Tool: c.tool("git push --force origin main; touch force-ran")})
			}
			if c.curl {
				turns = append(turns, fakemodel.Turn{Text: "Checking the service.", Tool: c.tool("curl -s " + target.URL + "/")})
			}
			turns = append(turns,
				fakemodel.Turn{Text: "Writing the file.", Tool: c.tool("printf 'hello\\n' > hello.txt && git add hello.txt && git -c user.name=" + c.cli +
					" -c user.email=" + c.cli + "@example.com commit -qm 'add hello.txt'")},
				fakemodel.Turn{Text: `Done. {"criteria_met": [true], "notes": ["hello.txt added"], "summary": "wrote hello.txt"}`})
			o := runnerOpts{tokens: true, executor: runner{c.cli, turns}}
			if c.rootData {
				o.data = rootOnlyDataDir(t)
			}
			s := startRunnerDev(t, o)
			ops, repo := s.api, s.repo
			s.planner.startTask(c.id, lowRiskPlan(repo))
			denied := func(call task.ToolCall) bool {
				return call.Decision == task.ToolDeny && call.Rule == "no-force-push" && call.By == task.ByPolicy &&
					call.Agent == "exec" && call.Tool == c.recorded && call.Kind == "shell"
			}

			want := 1 // the commit
			if c.push {
				want++
			}
			if c.curl {
				// The curl is asked: a tool_call decision, the force push
				// already denied by then.
				d := ops.pending(c.id, task.KindToolCall, c.within)
				if !strings.Contains(d.Prompt, "curl") || len(d.Options) != 3 || d.Options[2].ID != task.OptDeny || !d.Options[2].NoteRequired {
					t.Errorf("the decision: %+v", d)
				}
				if hits.Load() != 0 {
					t.Error("curl ran before the admins answered")
				}
				calls := ops.toolCalls(c.id)
				if len(calls) != want || (c.push && !denied(calls[0])) {
					t.Fatalf("the tool calls before the answer: %+v", calls)
				}
				if a := calls[want-1]; a.Decision != task.ToolPending || a.Rule != "ask-network" || a.Tool != c.recorded || a.Agent != "exec" {
					t.Fatalf("the tool calls before the answer: %+v", calls)
				}
				ops.decide(d, task.OptAllowOnce)
				want++
				// curl reaches the target through the run's egress proxy:
				// the destination is asked of the admins too, and curl
				// connects only once it is allowed.
				st := ops.waitFor(c.id, "the destination's ask", c.within, func(st task.State) bool {
					return st.Pending != nil && st.Pending.Kind == task.KindToolCall && st.Pending.ID != d.ID
				})
				e := *st.Pending
				_, port, _ := net.SplitHostPort(ln.Addr().String())
				if !strings.Contains(e.Prompt, "connect") || !strings.Contains(e.Prompt, port) {
					t.Errorf("the destination's decision: %+v", e)
				}
				if hits.Load() != 0 {
					t.Error("curl connected before the destination was allowed")
				}
				ops.decide(e, task.OptAllowOnce)
				want++
			}
			st := ops.awaitResult(c.id, c.within)
			if c.curl && hits.Load() != 1 {
				t.Errorf("curl reached the target %d times after the approval, want 1", hits.Load())
			}
			if got := git(t, repo, "show", "feature/e2e:hello.txt"); got != "hello" {
				t.Errorf("hello.txt on the branch = %q (status %s, %s)", got, st.Status, st.LastError)
			}
			if c.push {
				// ampflow commits what a run leaves behind: the denied
				// command's file would be on the branch had it run.
				if files := git(t, repo, "ls-tree", "--name-only", "feature/e2e"); strings.Contains(files, "force-ran") {
					t.Error("the denied force push ran")
				}
				if reqs := s.executor.AgentRequests(); len(reqs) < 2 || !reqs[1].Text("force pushes are not allowed") {
					t.Errorf("the model was not told why the force push was denied (%d requests)", len(reqs))
				}
			}

			calls := ops.toolCalls(c.id)
			if len(calls) != want {
				t.Fatalf("%d tool calls, want %d: %+v", len(calls), want, calls)
			}
			if c.push && !denied(calls[0]) {
				t.Errorf("the force push: %+v", calls[0])
			}
			if c.curl {
				if a := calls[len(calls)-3]; a.Decision != task.ToolAllow || a.By != "ops" || a.Option != task.OptAllowOnce || a.Rule != "ask-network" || a.Kind != "shell" {
					t.Errorf("the asked call: %+v", a)
				}
				if a := calls[len(calls)-2]; a.Decision != task.ToolAllow || a.By != "ops" || a.CLI != "egress" || a.Tool != "connect" || a.Rule != "ask-egress" || a.Kind != "network" || a.Agent != "exec" {
					t.Errorf("the asked destination: %+v", a)
				}
			}
			if a := calls[want-1]; a.Decision != task.ToolAllow || a.By != task.ByPolicy || a.Rule != "" || !strings.Contains(a.Input, "hello.txt") {
				t.Errorf("the commit: %+v", a)
			}
			// The CLI lists them too, filtered.
			out, stderr, code := cliAs(t, s.p, opsToken, nil, "task", "tools", c.id, "--decision", "deny", "-o", "json")
			var listed []task.ToolCall
			if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || (len(listed) == 1) != c.push || (c.push && listed[0].Rule != "no-force-push") {
				t.Errorf("ampflow task tools --decision deny: exit %d\n%s%s", code, out, stderr)
			}
		})
	}
}

// rootOnlyDataDir is a data_dir Gemini CLI reads a system settings file
// from: it skips one that is not root's or sits under a directory others
// can write (t.TempDir under /tmp is such), so the test makes one under
// the user's cache directory and skips when that cannot be.
func rootOnlyDataDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("Gemini CLI reads ampflow's hook settings only from a root-owned data_dir")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Skip(err)
	}
	dir, err := os.MkdirTemp(cache, "ampflow-e2e-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for p := dir; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			t.Skip(err)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Uid != 0 || st.Mode().Perm()&0o022 != 0 {
			t.Skipf("%s is not root's alone: Gemini CLI would skip the hook's settings", p)
		}
		if filepath.Dir(p) == p {
			return dir
		}
	}
}
