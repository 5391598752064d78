package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
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

// runnerKey is the model API key the CLIs are given; it must reach no log.
const runnerKey = "sk-runner-e2e-secret"

// The tokens of a runner dev server with tokens: an admin (ops), a
// coordinator (planner) and the executor's own (exec), which its runner's
// tool hook presents.
const (
	opsToken     = "admintok-e2e-0123456789"
	plannerToken = "coordtok-e2e-0123456789"
	execToken    = "exectok-e2e-0123456789"
)

// runner is an agent CLI (claude, codex, gemini or opencode) run against
// a loopback fake of its model API that plays turns.
type runner struct {
	cli   string
	turns []fakemodel.Turn
}

// runnerOpts configure startRunnerDev.
type runnerOpts struct {
	executor runner
	// reviewer is no runner when its cli is empty.
	reviewer runner
	// tokens gives the API the tokens opsToken, plannerToken and
	// execToken, the executor's runner presenting execToken; without, the
	// API is open.
	tokens bool
	// data is the data directory; empty is a temporary one.
	data string
	env  []string
	// executorEnv are NAME=value pairs the executor's run gets besides
	// its CLI's (added to agents.executor.env).
	executorEnv []string
}

// runnerDev is `ampflow dev` whose agents are the installed CLIs, and a
// repository whose own checkout is on main.
type runnerDev struct {
	p *devProc
	// executor and reviewer are the runners' fake models; reviewer is nil
	// when the reviewer is no runner.
	executor, reviewer *fakemodel.Server
	// api speaks as the admin (ops) and planner as the coordinator; on an
	// open API both are the open API's.
	api, planner *apiClient
	repo         string
}

// startRunnerDev starts `ampflow dev` with o's runners (runnerDev.start).
func startRunnerDev(t *testing.T, o runnerOpts) *runnerDev {
	t.Helper()
	s := &runnerDev{executor: fakemodel.New(o.executor.turns...)}
	t.Cleanup(s.executor.Close)
	env := runnerEnv(t, amp.RoleExecutor, o.executor.cli, s.executor)
	for _, kv := range o.executorEnv {
		name, _, _ := strings.Cut(kv, "=")
		for i, e := range env {
			if strings.HasPrefix(e, "AMPFLOW_AGENTS_EXECUTOR_ENV=") {
				env[i] = e + "," + name
			}
		}
		env = append(env, kv)
	}
	if o.reviewer.cli != "" {
		s.reviewer = fakemodel.New(o.reviewer.turns...)
		t.Cleanup(s.reviewer.Close)
		env = append(env, runnerEnv(t, amp.RoleReviewer, o.reviewer.cli, s.reviewer)...)
	}
	s.start(t, o.tokens, o.data, append(env, o.env...))
	return s
}

// start starts `ampflow dev` with env and, with tokens, the tokens
// opsToken, plannerToken and execToken; it checks, as the test ends, that
// neither the model API key nor the executor's token reached its log.
func (s *runnerDev) start(t *testing.T, tokens bool, data string, env []string) {
	t.Helper()
	if tokens {
		env = append(env, "AMPFLOW_AUTH_TOKENS="+opsToken+":admin:ops,"+plannerToken+":coordinator:planner,"+execToken+":executor:exec",
			"AMPFLOW_AGENTS_EXECUTOR_TOKEN_NAME=exec")
	}
	if data == "" {
		data = t.TempDir()
	}
	s.p = startDev(t, data, env...)
	s.repo = gitRepo(t)
	git(t, s.repo, "checkout", "-q", "main") // the user's checkout stays on main
	s.api = newAPIClient(t, s.p.api, "")
	s.planner = s.api
	if tokens {
		s.api, s.planner = s.api.as(opsToken), s.api.as(plannerToken)
	}
	t.Cleanup(func() {
		if out := s.p.output(); strings.Contains(out, runnerKey) || (tokens && strings.Contains(out, execToken)) {
			t.Error("a secret reached dev's log")
		}
	})
}

// runnerEnv is what `ampflow dev` needs to run the installed CLI cli as
// role against model, with runnerKey for its key.
func runnerEnv(t *testing.T, role amp.Role, cli string, model *fakemodel.Server) []string {
	t.Helper()
	v := "AMPFLOW_AGENTS_" + strings.ToUpper(string(role)) + "_"
	return append([]string{v + "MODE=runner"}, agentCLIEnv(t, v, cli, model)...)
}

// agentCLIEnv is what `ampflow dev` needs to run the installed CLI cli,
// configured under the keys of prefix (AMPFLOW_AGENTS_EXECUTOR_,
// AMPFLOW_GOALS_PLANNER_), against model, with runnerKey for its key.
func agentCLIEnv(t *testing.T, v, cli string, model *fakemodel.Server) []string {
	t.Helper()
	env := []string{v + "RUNNER=" + cli, v + "COMMAND=" + agentBin(t, cli)}
	switch cli {
	case "claude":
		return append(env, v+"ENV=HOME="+t.TempDir()+",ANTHROPIC_BASE_URL="+model.URL()+",ANTHROPIC_API_KEY,IS_SANDBOX=1",
			"ANTHROPIC_API_KEY="+runnerKey)
	case "codex":
		home, codexHome := codexHomes(t, model.URL())
		// The provider's base_url is in CODEX_HOME, which the run writes:
		// its sandbox forwards the loopback endpoint the role's env names.
		return append(env, v+"MODEL=gpt-5.5", v+"ENV=HOME="+home+",CODEX_HOME="+codexHome+",FAKE_OPENAI_KEY,OPENAI_BASE_URL="+model.URL()+"/v1",
			"FAKE_OPENAI_KEY="+runnerKey)
	case "gemini":
		return append(env, v+"MODEL=gemini-2.5-pro",
			v+"ENV=HOME="+geminiHome(t)+",GEMINI_API_KEY,GOOGLE_GEMINI_BASE_URL="+model.URL()+",GEMINI_CLI_TRUST_WORKSPACE=true",
			"GEMINI_API_KEY="+runnerKey)
	case "opencode":
		config := filepath.Join(t.TempDir(), "opencode.json")
		writeFile(t, config, string(mustJSON(t, map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"provider": map[string]any{"fake": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "Fake",
				"options": map[string]any{"baseURL": model.URL() + "/v1", "apiKey": "{env:FAKE_OPENCODE_KEY}"},
				"models":  map[string]any{"fake-model": map[string]any{"name": "Fake Model"}},
			}},
			"autoupdate": false, "share": "disabled",
		})))
		return append(env, v+"MODEL=fake/fake-model",
			v+"ENV=HOME="+opencodeHome(t)+",OPENCODE_CONFIG="+config+",OPENCODE_DISABLE_MODELS_FETCH=1,OPENCODE_DISABLE_AUTOUPDATE=1,FAKE_OPENCODE_KEY",
			"FAKE_OPENCODE_KEY="+runnerKey)
	}
	t.Fatalf("no runner %q", cli)
	return nil
}

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

// geminiHome is a HOME for Gemini CLI. It picks the gateway auth with a
// base URL set, which its headless mode refuses; the user's settings
// pick the API key.
func geminiHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".gemini", "settings.json"), `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`)
	return home
}

// opencodeHome is a HOME for OpenCode: its global config directory
// already holds the plugin SDK it installs there before loading any
// plugin, so an offline run does not wait for npm to give up.
func opencodeHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(cfg, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cfg, "package.json"), `{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}`)
	writeFile(t, filepath.Join(cfg, "package-lock.json"), `{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}`)
	return home
}
