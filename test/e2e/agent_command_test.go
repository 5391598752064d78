package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

// failingAgent is a command-mode executor that crashes: it keeps the
// environment it was given, prints a traceback and a token it was let
// see, and exits 3 without a reply.
const failingAgent = `cat >/dev/null
env >"%DIR%/env"
pwd >"%DIR%/cwd"
echo 'Traceback (most recent call last):' >&2
echo "KeyError: 'task_id' (token $LEAKED_TOKEN)" >&2
exit 3
`

// TestCommandAgentFailureDecision runs a real `ampflow dev` whose
// command-mode executor crashes on its dispatch: the admins get a
// delivery_failed decision at once, not after the 300s ACK timeout, with
// the agent's stderr, secrets masked; the agent saw none of the worker's
// secrets; and dev said at start how it reaches each agent.
func TestCommandAgentFailureDecision(t *testing.T) {
	const secret = "ghp-e2e-s3cr3t-token"
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	writeFile(t, script, strings.ReplaceAll(failingAgent, "%DIR%", dir))
	p := startDev(t, t.TempDir(),
		"AMPFLOW_AGENTS_EXECUTOR_MODE=command", "AMPFLOW_AGENTS_EXECUTOR_COMMAND=sh,"+script,
		"AMPFLOW_AGENTS_EXECUTOR_ENV=LEAKED_TOKEN",
		"AMPFLOW_CI_GITHUB_TOKEN="+secret, "LEAKED_TOKEN="+secret,
		// No admins: dev makes the operating-system user the admin, and
		// its open API acts as that user.
		"AMPFLOW_LOG_LEVEL=info")
	if out := p.output(); !strings.Contains(out, "executor   command sh "+script) || !strings.Contains(out, "reviewer   pull") {
		t.Errorf("dev did not say how it reaches the agents:\n%s", out)
	}
	api := newAPIClient(t, p.api, "")
	const id = "T-2026-871"
	repo := gitRepo(t)
	api.startTask(id, lowRiskPlan(repo))
	started := time.Now()
	d := api.pending(id, task.KindDeliveryFailed, 60*time.Second)
	if took := time.Since(started); took > 60*time.Second {
		t.Errorf("the decision came after %s", took)
	}
	if !strings.Contains(d.Context.AgentStderr, "KeyError: 'task_id'") || !strings.Contains(d.Context.AgentStderr, "[redacted]") ||
		strings.Contains(d.Context.AgentStderr, secret) {
		t.Errorf("decision context stderr %q, want the traceback with the token masked", d.Context.AgentStderr)
	}
	var opts []string
	for _, o := range d.Options {
		opts = append(opts, o.ID)
	}
	if strings.Join(opts, ",") != "redispatch,wait,terminate" {
		t.Errorf("options %v", opts)
	}
	st := api.state(id)
	if !strings.Contains(st.LastError, "exited with status 3") || strings.Contains(st.LastError, "\n") || strings.Contains(st.LastError, secret) {
		t.Errorf("Last error %q, want one line", st.LastError)
	}
	env, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "AMPFLOW_CI_GITHUB_TOKEN") || strings.Contains(string(env), "AMPFLOW_LOG_LEVEL") {
		t.Errorf("the agent saw the worker's environment:\n%s", env)
	}
	if cwd, _ := os.ReadFile(filepath.Join(dir, "cwd")); strings.TrimSpace(string(cwd)) != repo {
		t.Errorf("the agent ran in %q, want the task's repository %s", cwd, repo)
	}

	api.decide(d, task.OptTerminate)
	api.waitFor(id, "terminated", 60*time.Second, func(st task.State) bool { return st.Status == task.StatusTerminated })
}
