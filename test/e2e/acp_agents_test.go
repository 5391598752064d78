package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// acpAgent is an ACP agent of TestACPAgents: its command line, its
// settings, its shell tool, the tasks it works on, and a fake model for
// each role.
type acpAgent struct {
	name    string
	command func(t *testing.T) string // the command line, for a shell
	// env are its settings for a role whose fake model is model.
	env   func(t *testing.T, model *fakemodel.Server) []string
	shell func(cmd string) *fakemodel.ToolCall
	// resumed and denied are its tasks' ids (the dispatcher's key).
	resumed, denied  string
	executor, review *fakemodel.Server
}

// The agents of TestACPAgents: OpenCode in its ACP mode, and Claude
// Code's ACP adapter driving the pinned Claude Code.
var acpAgents = []acpAgent{
	{name: "opencode", resumed: "T-2026-970", denied: "T-2026-971",
		// OpenCode's ACP mode serves itself on the run's loopback, which
		// the sandbox's NO_PROXY keeps off the egress proxy.
		command: func(t *testing.T) string { return agentBin(t, "opencode") + " acp" },
		env: func(t *testing.T, model *fakemodel.Server) []string {
			return []string{"OPENCODE_CONFIG=" + acpOpenCodeConfig(t, model), "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "FAKE_OPENCODE_KEY"}
		},
		shell: func(cmd string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": cmd, "description": "Run it"}}
		}},
	{name: "claude-agent-acp", resumed: "T-2026-972", denied: "T-2026-973",
		command: func(t *testing.T) string { return agentBin(t, "claude-agent-acp") },
		env: func(t *testing.T, model *fakemodel.Server) []string {
			// Claude Code's own traffic would be asked of the admins.
			return []string{"ANTHROPIC_BASE_URL=" + model.URL(), "ANTHROPIC_API_KEY", "CLAUDE_CODE_EXECUTABLE=" + agentBin(t, "claude"),
				"IS_SANDBOX=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
		},
		shell: func(cmd string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "Run it"}}
		}},
}

// commit has the agent's shell run cmd, then commit the files with msg.
func (a acpAgent) commit(text, cmd, msg string, files ...string) fakemodel.Turn {
	return fakemodel.Turn{Text: text, Tool: a.shell(cmd + " && git add " + strings.Join(files, " ") +
		" && git -c user.name=agent -c user.email=agent@example.com commit -qm '" + msg + "'")}
}

// roundOne marks the executor's first round: only a loaded session
// carries it into the second.
const roundOne = "ROUND-ONE-7713"

// TestACPAgents runs OpenCode (`opencode acp`) and claude-agent-acp
// through the acp runner of one sandboxed `ampflow dev`, as both the
// executor and the reviewer, each against fakes of its model API; a
// dispatcher script starts each task's agent by its id. For each agent,
// in parallel: a task from dispatch to done whose first result the
// reviewer rejects, the executor's session loaded again (session/load of
// the same id) for the second round, whose command the policy asks the
// admins about and they approve, run once; and a command denied with a
// note that reaches the model. TestACP does the same with Gemini CLI;
// the runner's tests (activities/runner) stop each agent by its watchdog.
func TestACPAgents(t *testing.T) {
	approve := fakemodel.Turn{Text: `Looks right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "read it"}]}`}
	reject := fakemodel.Turn{Text: `Not yet. {"decision": "rejected", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": false, "evidence": "it says helo"}], ` +
		`"issues": [{"severity": "major", "file": "hello.txt", "line": 1, "description": "` + helloIssue + `", "suggested_fix": "write hello"}]}`}
	agents := make([]acpAgent, len(acpAgents))
	for i, a := range acpAgents {
		// Each round's first turn is For its prompt: a request an agent
		// makes after its last turn (as Claude Code may while it is
		// stopped) does not take the next round's.
		first := a.commit("Writing the file. "+roundOne, "printf 'helo\\n' > hello.txt", "add hello.txt", "hello.txt")
		first.For = "Task " + a.resumed + ":"
		second := a.commit("Fixing it.", "printf 'hello\\n' > hello.txt && echo ASK-ME >> asked.txt", "fix the greeting", "hello.txt", "asked.txt")
		second.For = helloIssue
		a.executor = fakemodel.New(
			first,
			fakemodel.Turn{Text: "Done. " + acpReport},
			// The second round, in the loaded session: its command asks.
			second,
			fakemodel.Turn{Text: "Fixed. " + acpReport},
			// Denied: Claude Code tells the model and goes on; OpenCode
			// ends its turn. Then the admin's note comes in a turn of its
			// own (OpenCode leaves the last turn unplayed).
			fakemodel.Turn{Text: "Marking.", Tool: a.shell("echo ASK-ME >> denied.txt"), For: "Task " + a.denied + ":"},
			fakemodel.Turn{Text: "Not marked. " + acpReport},
			fakemodel.Turn{Text: "Understood: DENIAL-SEEN. " + acpReport},
		)
		review := func(turn fakemodel.Turn, id string) fakemodel.Turn {
			turn.For = "task " + id + ":"
			return turn
		}
		a.review = fakemodel.New(review(reject, a.resumed), review(approve, a.resumed), review(approve, a.denied))
		t.Cleanup(a.executor.Close)
		t.Cleanup(a.review.Close)
		agents[i] = a
	}
	s := &runnerDev{}
	s.start(t, true, "", append(acpAgentsEnv(t, agents), acpRules))
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		t.Logf("ampflow dev:\n%s", s.p.output())
		for _, a := range agents {
			for _, r := range a.executor.Requests() {
				msgs, _, _ := strings.Cut(string(r.Body), `"tools":`)
				t.Logf("%s's executor model: turn %d, %s, its messages end %q", a.name, r.Turn, r.Path, msgs[max(0, len(msgs)-300):])
			}
		}
	})
	if out := s.p.output(); !strings.Contains(out, "reviewer   runner acp") || strings.Contains(out, "NOT sandboxed") {
		t.Errorf("dev did not say it checked the acp runners, sandboxed:\n%s", out)
	}
	for _, a := range agents {
		// The repositories outlive the subtests: the server cleans up
		// after each task once it is done. Each branch is named for its
		// task: ampflow refuses a branch another task's checkout holds.
		resumed, denied := acpTask(t, "feature/"+a.resumed), acpTask(t, "feature/"+a.denied)
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			t.Run("ResumedAfterRejection", func(t *testing.T) { testACPResumed(t, s.on(t), a, resumed) })
			t.Run("DeniedWithNote", func(t *testing.T) { testACPDenied(t, s.on(t), a, denied) })
		})
	}
}

// testACPResumed: the reviewer rejects the first result; the second
// round loads the executor's session, asks the admins before its
// command, runs it once when they approve, and the task is done.
func testACPResumed(t *testing.T, s *runnerDev, a acpAgent, p acpTaskPlan) {
	id, plan, repo := a.resumed, p.plan, p.repo
	s.planner.startTask(id, plan)
	d := s.asked(t, id)
	if st := s.api.state(id); st.RejectCount != 1 {
		t.Fatalf("the ask came with %d rejections, want the second round's", st.RejectCount)
	}
	// The first round's session, kept by the worker for the next run
	// (data_dir/sessions).
	sessionFile := filepath.Join(s.p.dataDir, "sessions", id+".executor.acp")
	first := readTrim(t, sessionFile)
	if !strings.Contains(d.Prompt, "ASK-ME") {
		t.Errorf("the decision: %+v", d)
	}
	s.api.decide(d, task.OptAllowOnce)
	// The second round's session, kept until the task ends.
	s.api.waitFor(id, "the second round's result in review", 3*time.Minute, func(st task.State) bool {
		return st.Underlying() == task.StatusInReview || st.Status.Terminal() || st.Underlying() == task.StatusAwaitingAdmin
	})
	second := readTrim(t, sessionFile)
	st := s.ended(id)
	if st.Status != task.StatusDone || st.Rounds != 2 || st.RejectCount != 1 {
		t.Fatalf("task %s: status %s (%s), %d rounds, %d rejections; want done in 2 and 1", id, st.Status, st.LastError, st.Rounds, st.RejectCount)
	}
	if got := git(t, repo, "show", plan.Branch+":hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
	if got := git(t, repo, "show", plan.Branch+":asked.txt"); got != "ASK-ME" {
		t.Errorf("asked.txt on the branch = %q, want the approved command run once", got)
	}
	// session/load of the same session: the id is the first round's, and
	// the second round's model request carries the first round.
	if first == "" || second != first {
		t.Errorf("the executor's session %q, then %q: want the first loaded again", first, second)
	}
	reqs := a.executor.AgentRequests()
	if len(reqs) < 3 || reqs[0].Text(helloIssue) || !reqs[2].Text(roundOne) || !reqs[2].Text(helloIssue) {
		t.Errorf("the second round's first request does not carry the first round and the issue (%d requests)", len(reqs))
	}
	calls := agentCalls(s.api, id)
	if len(calls) != 2 || calls[0].Decision != task.ToolAllow || strings.Contains(calls[0].Input, "ASK-ME") ||
		calls[1].Decision != task.ToolAllow || calls[1].By != "ops" || calls[1].Option != task.OptAllowOnce {
		t.Errorf("the tool calls: %+v", calls)
	}
}

// testACPDenied: the admin denies the command with a note; it does not
// run, and the note reaches the model after the agent's turn.
func testACPDenied(t *testing.T, s *runnerDev, a acpAgent, p acpTaskPlan) {
	const note = "NOTE-5522 markers are for humans"
	id, plan, repo := a.denied, p.plan, p.repo
	s.planner.startTask(id, plan)
	d := s.asked(t, id)
	body := httpapi.DecideRequest{Option: task.OptDeny, Note: note, Digest: d.Digest}
	if code, resp := s.api.call("POST", "/v1/decisions/"+d.ID, body, nil); code != http.StatusOK {
		t.Fatalf("denying %s: %d %s", d.ID, code, resp)
	}
	st := s.api.awaitResult(id, 3*time.Minute)
	if files := git(t, repo, "ls-tree", "--name-only", "-r", plan.Branch); strings.Contains(files, "denied.txt") {
		t.Errorf("the denied command ran (status %s)", st.Status)
	}
	var noted bool
	for _, r := range a.executor.AgentRequests() {
		noted = noted || r.Text("NOTE-5522")
	}
	if !noted {
		t.Errorf("the admin's note did not reach the model (task %s)", st.Status)
	}
	calls := agentCalls(s.api, id)
	if len(calls) != 1 || calls[0].Decision != task.ToolDeny || calls[0].By != "ops" || !strings.Contains(calls[0].Reason, "NOTE-5522") {
		t.Errorf("the tool calls: %+v", calls)
	}
}

// acpAgentsEnv makes both roles of `ampflow dev` a dispatcher that runs
// each task's agent, with every agent's settings, each role's pointing
// at its own fakes.
func acpAgentsEnv(t *testing.T, agents []acpAgent) []string {
	t.Helper()
	var script strings.Builder
	script.WriteString("#!/bin/sh\n# The ACP agent of the task (AMP_TASK_ID).\ncase \"$AMP_TASK_ID\" in\n")
	for _, a := range agents {
		fmt.Fprintf(&script, "%s|%s) exec %s ;;\n", a.resumed, a.denied, a.command(t))
	}
	script.WriteString("esac\necho \"no ACP agent for $AMP_TASK_ID\" >&2\nexit 2\n")
	dispatch := filepath.Join(t.TempDir(), "acp-agent")
	if err := os.WriteFile(dispatch, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"ANTHROPIC_API_KEY=" + runnerKey, "FAKE_OPENCODE_KEY=" + runnerKey}
	for _, role := range []string{"EXECUTOR", "REVIEWER"} {
		v := "AMPFLOW_AGENTS_" + role + "_"
		settings := []string{"HOME=" + opencodeHome(t)}
		for _, a := range agents {
			model := a.executor
			if role == "REVIEWER" {
				model = a.review
			}
			settings = append(settings, a.env(t, model)...)
		}
		env = append(env, v+"MODE=runner", v+"RUNNER=acp", v+"COMMAND="+dispatch, v+"ENV="+strings.Join(settings, ","))
	}
	return env
}

// acpOpenCodeConfig is an OpenCode config whose model is the fake at
// model, and which asks before a command or an edit (OpenCode asks
// nothing unless told).
func acpOpenCodeConfig(t *testing.T, model *fakemodel.Server) string {
	t.Helper()
	config := filepath.Join(t.TempDir(), "opencode.json")
	writeFile(t, config, string(mustJSON(t, map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": model.URL() + "/v1", "apiKey": "{env:FAKE_OPENCODE_KEY}"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "Fake Model"}},
		}},
		"model":      "fake/fake-model",
		"permission": map[string]any{"bash": "ask", "edit": "ask"},
		"autoupdate": false, "share": "disabled",
	})))
	return config
}

// acpTaskPlan is a plan on a repository of its own (acpPlan).
type acpTaskPlan struct {
	plan amp.TaskDispatch
	repo string
}

func acpTask(t *testing.T, branch string) acpTaskPlan {
	plan, repo := acpPlan(t, branch)
	return acpTaskPlan{plan, repo}
}

// on is the server with clients reporting to t, a subtest's.
func (s *runnerDev) on(t *testing.T) *runnerDev {
	d := *s
	d.api, d.planner = s.api.on(t), s.planner.on(t)
	return &d
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
