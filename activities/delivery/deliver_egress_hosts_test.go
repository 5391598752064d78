package delivery

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ampflow/ampflow/activities/runner"
)

func TestModelHosts(t *testing.T) {
	dir := t.TempDir()
	given := filepath.Join(dir, "given", "opencode.json")
	written := filepath.Join(dir, "home", "opencode.json")
	config := `{"provider":{"corp":{"options":{"baseURL":"https://llm.corp.example/v1"}},"local":{"options":{"baseURL":"http://127.0.0.1:8080/v1"}}}}`
	for _, p := range []string{given, written} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		runner string
		env    []string
		want   []string
	}{
		{"Native", runner.Claude, []string{"ANTHROPIC_BASE_URL=https://proxy.example"}, []string{"api.anthropic.com"}},
		{"ACPNothing", runner.ACP, []string{"HOME=/h"}, nil},
		{"ACPKeys", runner.ACP, []string{"GEMINI_API_KEY=k", "ANTHROPIC_API_KEY=k", "OPENAI_API_KEY="},
			[]string{"api.anthropic.com", "generativelanguage.googleapis.com", "oauth2.googleapis.com"}},
		// A base URL replaces the vendor's host: the key goes to it.
		{"ACPBaseURLs", runner.ACP, []string{"ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL=https://gw.example:8443/anthropic",
			"GOOGLE_GEMINI_BASE_URL=http://gemini.example", "OPENAI_BASE_URL=https://oai.example/v1"},
			[]string{"gemini.example:80", "gw.example:8443", "oai.example:443"}},
		{"ACPLoopback", runner.ACP, []string{"ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL=http://127.0.0.1:9999", "OPENAI_BASE_URL=http://localhost:1"}, nil},
		{"ACPOpenCodeContent", runner.ACP, []string{"OPENCODE_CONFIG_CONTENT=" + config}, []string{"llm.corp.example:443"}},
		{"ACPOpenCodeFile", runner.ACP, []string{"OPENCODE_CONFIG=" + given}, []string{"llm.corp.example:443"}},
		// A config the run writes could name any host for its next run.
		{"ACPOpenCodeWritten", runner.ACP, []string{"OPENCODE_CONFIG=" + written}, nil},
		{"ACPOpenCodeJSONC", runner.ACP, []string{"OPENCODE_CONFIG_CONTENT={// a comment\n}"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := &runner.Spec{Runner: c.runner, Env: c.env, Dir: filepath.Join(dir, "wt"),
				Sandbox: &runner.Sandbox{Write: []string{filepath.Join(dir, "home")}}}
			if got := modelHosts(spec); !slices.Equal(got, c.want) {
				t.Errorf("modelHosts = %q, want %q", got, c.want)
			}
		})
	}
}

// TestModelHostsAllowed: the proxy lets an ACP run reach its base URL's
// host at its port only.
func TestModelHostsAllowed(t *testing.T) {
	spec := &runner.Spec{Runner: runner.ACP, Env: []string{"ANTHROPIC_BASE_URL=https://gw.example/anthropic"}}
	allowed := (&Egress{}).allowed(modelHosts(spec))
	if !allowed("gw.example", "443") || allowed("gw.example", "80") || allowed("api.anthropic.com", "443") {
		t.Error("the run reaches other than its base URL's host:port")
	}
}
