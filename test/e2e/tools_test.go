package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
)

// TestToolPolicyClaude runs the real Claude Code as executor against a
// fake model that force-pushes, then uses the network, then commits: the
// PreToolUse hook ampflow gives it denies the force push without asking
// (the reason reaches the model), asks the admins about curl (approved
// over the API, the command runs), and every call is in the task's chain,
// made with the executor's own token.
func TestToolPolicyClaude(t *testing.T) {
	claudeBin := agentBin(t, "claude")
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "pong")
	}))
	t.Cleanup(target.Close)
	bash := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run it"}}
	}
	model := fakemodel.New(
		fakemodel.Turn{Text: "Pushing.", Tool: bash("git push --force origin main")},
		fakemodel.Turn{Text: "Checking the service.", Tool: bash("curl -s " + target.URL + "/")},
		fakemodel.Turn{Text: "Writing the file.", Tool: bash("printf 'hello\\n' > hello.txt && git add hello.txt && git -c user.name=claude -c user.email=claude@example.com commit -qm 'add hello.txt'")},
		fakemodel.Turn{Text: `Done. {"criteria_met": [true], "notes": ["hello.txt added"], "summary": "wrote hello.txt"}`},
	)
	t.Cleanup(model.Close)

	home := t.TempDir()
	const key = "sk-tools-e2e-secret"
	const admin, coord, execTok = "admintok-e2e-0123456789", "coordtok-e2e-0123456789", "exectok-e2e-0123456789"
	data := t.TempDir()
	p := startDev(t, data,
		"AMPFLOW_AUTH_TOKENS="+admin+":admin:ops,"+coord+":coordinator:planner,"+execTok+":executor:exec",
		"AMPFLOW_AGENTS_EXECUTOR_MODE=runner", "AMPFLOW_AGENTS_EXECUTOR_RUNNER=claude",
		"AMPFLOW_AGENTS_EXECUTOR_COMMAND="+claudeBin, "AMPFLOW_AGENTS_EXECUTOR_TOKEN_NAME=exec",
		"AMPFLOW_AGENTS_EXECUTOR_ENV=HOME="+home+",ANTHROPIC_BASE_URL="+model.URL()+",ANTHROPIC_API_KEY,IS_SANDBOX=1",
		"ANTHROPIC_API_KEY="+key)
	repo := gitRepo(t)
	git(t, repo, "checkout", "-q", "main")
	base := "http://" + p.api
	planner := newAPIClient(t, p.api, coord)
	ops := planner.as(admin)
	const id = "T-2026-882"
	planner.startTask(id, lowRiskPlan(repo))

	// The curl is asked: a tool_call decision, the force push already
	// denied by then.
	d := ops.pending(id, task.KindToolCall, 3*time.Minute)
	if !strings.Contains(d.Prompt, "curl") || len(d.Options) != 3 || d.Options[2].ID != task.OptDeny || !d.Options[2].NoteRequired {
		t.Errorf("the decision: %+v", d)
	}
	if hits.Load() != 0 {
		t.Error("curl ran before the admins answered")
	}
	calls := ops.toolCalls(id)
	if len(calls) < 2 || calls[0].Decision != task.ToolDeny || calls[0].Rule != "no-force-push" || calls[0].By != task.ByPolicy ||
		calls[0].Agent != "exec" || calls[1].Decision != task.ToolPending || calls[1].Rule != "ask-network" {
		t.Fatalf("the tool calls before the answer: %+v", calls)
	}
	ops.decide(d, task.OptAllowOnce)
	st := ops.awaitResult(id, 3*time.Minute)
	if hits.Load() != 1 {
		t.Errorf("curl reached the target %d times after the approval, want 1", hits.Load())
	}
	if got := git(t, repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q (status %s, %s)", got, st.Status, st.LastError)
	}
	// The deny's reason reached the model in its next request.
	reqs := model.AgentRequests()
	if len(reqs) < 2 || !reqs[1].Text("force pushes are not allowed") {
		t.Errorf("the model was not told why the force push was denied (%d requests)", len(reqs))
	}

	calls = ops.toolCalls(id)
	if len(calls) != 3 {
		t.Fatalf("%d tool calls, want 3: %+v", len(calls), calls)
	}
	if c := calls[1]; c.Decision != task.ToolAllow || c.By != "ops" || c.Option != task.OptAllowOnce || c.Rule != "ask-network" || c.Kind != "shell" {
		t.Errorf("the asked call: %+v", c)
	}
	if c := calls[2]; c.Decision != task.ToolAllow || c.By != task.ByPolicy || c.Rule != "" || !strings.Contains(c.Input, "hello.txt") {
		t.Errorf("the commit: %+v", c)
	}
	// The CLI lists them too, filtered.
	cmd := exec.Command(binary, "task", "tools", id, "--decision", "deny", "-o", "json")
	cmd.Env = append(os.Environ(), "AMPFLOW_API_URL="+base, "AMPFLOW_API_TOKEN="+admin)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	var denied []task.ToolCall
	if err != nil || json.Unmarshal(out, &denied) != nil || len(denied) != 1 || denied[0].Rule != "no-force-push" {
		t.Errorf("ampflow task tools --decision deny: %v\n%s", err, out)
	}
	if strings.Contains(p.output(), key) || strings.Contains(p.output(), execTok) {
		t.Error("a secret reached dev's log")
	}
}

// codexExecutorEnv is what `ampflow dev` needs to run bin, the installed
// Codex CLI, as the executor against the fake model at modelURL.
func codexExecutorEnv(t *testing.T, bin, modelURL string) []string {
	home, codexHome := codexHomes(t, modelURL)
	return []string{"AMPFLOW_AGENTS_EXECUTOR_RUNNER=codex", "AMPFLOW_AGENTS_EXECUTOR_COMMAND=" + bin,
		"AMPFLOW_AGENTS_EXECUTOR_MODEL=gpt-5.5",
		"AMPFLOW_AGENTS_EXECUTOR_ENV=HOME=" + home + ",CODEX_HOME=" + codexHome + ",FAKE_OPENAI_KEY",
		"FAKE_OPENAI_KEY=" + runnerKey}
}

// opencodeExecutorEnv is what `ampflow dev` needs to run bin, the
// installed OpenCode CLI, as the executor against the fake model at
// modelURL (an OpenAI-compatible provider in its own configuration).
func opencodeExecutorEnv(t *testing.T, bin, modelURL string) []string {
	config := filepath.Join(t.TempDir(), "opencode.json")
	writeFile(t, config, string(mustJSON(t, map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": modelURL + "/v1", "apiKey": "{env:FAKE_OPENCODE_KEY}"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "Fake Model"}},
		}},
		"autoupdate": false, "share": "disabled",
	})))
	return []string{"AMPFLOW_AGENTS_EXECUTOR_RUNNER=opencode", "AMPFLOW_AGENTS_EXECUTOR_COMMAND=" + bin,
		"AMPFLOW_AGENTS_EXECUTOR_MODEL=fake/fake-model",
		"AMPFLOW_AGENTS_EXECUTOR_ENV=HOME=" + opencodeHome(t) + ",OPENCODE_CONFIG=" + config +
			",OPENCODE_DISABLE_MODELS_FETCH=1,OPENCODE_DISABLE_AUTOUPDATE=1,FAKE_OPENCODE_KEY",
		"FAKE_OPENCODE_KEY=" + runnerKey}
}

// startRunnerDev starts `ampflow dev` with an admin, a coordinator and the
// executor's token (named exec), the executor a runner set up by
// executor (codexExecutorEnv, opencodeExecutorEnv).
func startRunnerDev(t *testing.T, admin, coord, execTok string, executor []string) *devProc {
	return startDev(t, t.TempDir(), append([]string{
		"AMPFLOW_AUTH_TOKENS=" + admin + ":admin:ops," + coord + ":coordinator:planner," + execTok + ":executor:exec",
		"AMPFLOW_AGENTS_EXECUTOR_MODE=runner", "AMPFLOW_AGENTS_EXECUTOR_TOKEN_NAME=exec"}, executor...)...)
}
