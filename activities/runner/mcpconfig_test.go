package runner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestMCPConfig(t *testing.T) {
	m := MCP{URL: "http://127.0.0.1:7480/mcp?x=1&y=<2>", Token: "exec-secret", AgentKey: "deployer-key"}
	env := []string{"AMPFLOW_API_TOKEN=exec-secret", "AMPFLOW_AGENT_KEY=deployer-key"}
	headers := `"headers":{"Authorization":"Bearer ${AMPFLOW_API_TOKEN}","X-Ampflow-Agent-Key":"${AMPFLOW_AGENT_KEY}"}`
	for _, c := range []struct {
		runner   string
		args     []string
		env      []string
		settings string
	}{
		{Claude, []string{"--mcp-config", `{"mcpServers":{"ampflow":{` + headers + `,"type":"http","url":"http://127.0.0.1:7480/mcp?x=1&y=<2>"}}}`}, env, ""},
		{Codex, []string{"-c", `mcp_servers.ampflow.url="http://127.0.0.1:7480/mcp?x=1&y=<2>"`,
			"-c", `mcp_servers.ampflow.bearer_token_env_var="AMPFLOW_API_TOKEN"`,
			"-c", `mcp_servers.ampflow.env_http_headers={"X-Ampflow-Agent-Key"="AMPFLOW_AGENT_KEY"}`}, env, ""},
		{Gemini, nil, env, `{"mcpServers":{"ampflow":{` + headers + `,"httpUrl":"http://127.0.0.1:7480/mcp?x=1&y=<2>"}}}`},
		{OpenCode, nil, append(slices.Clone(env), `OPENCODE_CONFIG_CONTENT={"$schema":"https://opencode.ai/config.json","mcp":{"ampflow":{"enabled":true,`+
			`"headers":{"Authorization":"Bearer {env:AMPFLOW_API_TOKEN}","X-Ampflow-Agent-Key":"{env:AMPFLOW_AGENT_KEY}"},"oauth":false,"type":"remote","url":"http://127.0.0.1:7480/mcp?x=1&y=<2>"}}}`), ""},
	} {
		t.Run(c.runner, func(t *testing.T) {
			got, err := m.Config(c.runner)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Args, c.args) {
				t.Errorf("args\n%q\nwant\n%q", got.Args, c.args)
			}
			if !slices.Equal(got.Env, c.env) {
				t.Errorf("env\n%q\nwant\n%q", got.Env, c.env)
			}
			if string(got.Settings) != c.settings {
				t.Errorf("settings\n%s\nwant\n%s", got.Settings, c.settings)
			}
			for _, a := range append(slices.Clone(got.Args), string(got.Settings)) {
				if strings.Contains(a, "exec-secret") || strings.Contains(a, "deployer-key") {
					t.Errorf("a secret on the command line or in settings: %s", a)
				}
			}
		})
	}
	t.Run("WithoutAgentKey", func(t *testing.T) {
		got, err := MCP{URL: "http://h/mcp", Token: "tok"}.Config(Claude)
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]map[string]map[string]any
		if err := json.Unmarshal([]byte(got.Args[1]), &cfg); err != nil {
			t.Fatal(err)
		}
		if h := cfg["mcpServers"]["ampflow"]["headers"].(map[string]any); len(h) != 1 || !slices.Equal(got.Env, []string{"AMPFLOW_API_TOKEN=tok"}) {
			t.Errorf("headers %v, env %v", h, got.Env)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		if _, err := (MCP{URL: "http://h/mcp", Token: "tok"}).Config("aider"); err == nil {
			t.Error("an unknown runner is accepted")
		}
		if _, err := (MCP{Token: "tok"}).Config(Claude); err == nil {
			t.Error("no URL is accepted")
		}
	})
	t.Run("WithoutToken", func(t *testing.T) {
		for _, r := range Runners {
			got, err := MCP{URL: "http://h/mcp"}.Config(r)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(append(append(slices.Clone(got.Args), got.Env...), string(got.Settings)), " ")
			if len(got.Env) > 1 || strings.Contains(all, "Authorization") || strings.Contains(all, "bearer_token") {
				t.Errorf("%s without a token: %s", r, all)
			}
		}
	})
}
