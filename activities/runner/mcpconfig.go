package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MCPServerName is the name each CLI knows ampflow's MCP server by: its
// tools are mcp__ampflow__chat_send in Claude Code, and so on.
const MCPServerName = "ampflow"

// The variables an agent's CLI reads ampflow's credentials from. The
// configurations below name them rather than hold them, so no secret is
// on a command line or in a file.
const (
	MCPTokenEnv    = "AMPFLOW_API_TOKEN"
	MCPAgentKeyEnv = "AMPFLOW_AGENT_KEY"
)

// agentKeyHeader is integrations/mcp.AgentKeyHeader (activities do not
// import integrations).
const agentKeyHeader = "X-Ampflow-Agent-Key"

// MCP is ampflow's MCP server for one run: its URL (the API's /mcp) and
// the credentials of the run's role.
type MCP struct {
	URL string
	// Token is the role's API token; empty for an API that takes requests
	// without one (ampflow dev with no tokens), which gets no
	// Authorization header.
	Token string
	// AgentKey, when set, is the role's gate key: the gate's and the
	// contracts' tools present it.
	AgentKey string
}

// MCPConfig hands a CLI the MCP server: arguments for its command line,
// variables for its environment and, for Gemini CLI, settings.
type MCPConfig struct {
	Args []string
	// Env holds NAME=value pairs, the credentials among them.
	Env []string
	// Settings, for Gemini CLI, is a settings.json holding the server
	// (mcpServers), to merge into the settings it reads (the run's
	// HOME's .gemini/settings.json). Nil for the others.
	Settings []byte
	// Servers, for an ACP agent, are the servers its session gets
	// (Spec.MCPServers). Nil for the others.
	Servers []MCPServer
}

// Config returns what gives runner's CLI the server:
//
//	claude:   --mcp-config '{"mcpServers":{"ampflow":{"type":"http","url":…,"headers":{"Authorization":"Bearer ${AMPFLOW_API_TOKEN}"}}}}'
//	codex:    -c mcp_servers.ampflow.url="…" -c mcp_servers.ampflow.bearer_token_env_var="AMPFLOW_API_TOKEN"
//	gemini:   settings.json {"mcpServers":{"ampflow":{"httpUrl":…,"headers":{"Authorization":"Bearer ${AMPFLOW_API_TOKEN}"}}}}
//	opencode: OPENCODE_CONFIG_CONTENT={"mcp":{"ampflow":{"type":"remote","url":…,"headers":{…"{env:AMPFLOW_API_TOKEN}"},"oauth":false}}}
//
// each with the token in AMPFLOW_API_TOKEN, and the agent key, when set,
// in AMPFLOW_AGENT_KEY sent as the X-Ampflow-Agent-Key header. Each of
// the four expands those references itself (checked against the real
// binaries: Claude Code 2.1, Codex 0.171, Gemini CLI 0.61, OpenCode 1.18).
// Without a token there is no Authorization header.
func (m MCP) Config(runner string) (MCPConfig, error) {
	if m.URL == "" {
		return MCPConfig{}, fmt.Errorf("the MCP server's URL is required")
	}
	var env []string
	if m.Token != "" {
		env = append(env, MCPTokenEnv+"="+m.Token)
	}
	if m.AgentKey != "" {
		env = append(env, MCPAgentKeyEnv+"="+m.AgentKey)
	}
	// headers in the ${VAR} form Claude Code and Gemini CLI expand.
	headers := func(ref func(string) string) map[string]string {
		h := map[string]string{}
		if m.Token != "" {
			h["Authorization"] = "Bearer " + ref(MCPTokenEnv)
		}
		if m.AgentKey != "" {
			h[agentKeyHeader] = ref(MCPAgentKeyEnv)
		}
		return h
	}
	dollar := func(name string) string { return "${" + name + "}" }
	switch runner {
	case Claude:
		cfg, err := marshal(map[string]any{"mcpServers": map[string]any{MCPServerName: map[string]any{
			"type": "http", "url": m.URL, "headers": headers(dollar)}}})
		return MCPConfig{Args: []string{"--mcp-config", string(cfg)}, Env: env}, err
	case Codex:
		url, err := marshal(m.URL)
		if err != nil {
			return MCPConfig{}, err
		}
		prefix := "mcp_servers." + MCPServerName + "."
		args := []string{"-c", prefix + "url=" + string(url)}
		if m.Token != "" {
			args = append(args, "-c", prefix+`bearer_token_env_var="`+MCPTokenEnv+`"`)
		}
		if m.AgentKey != "" {
			args = append(args, "-c", prefix+`env_http_headers={"`+agentKeyHeader+`"="`+MCPAgentKeyEnv+`"}`)
		}
		return MCPConfig{Args: args, Env: env}, nil
	case Gemini:
		cfg, err := marshal(map[string]any{"mcpServers": map[string]any{MCPServerName: map[string]any{
			"httpUrl": m.URL, "headers": headers(dollar)}}})
		return MCPConfig{Env: env, Settings: cfg}, err
	case OpenCode:
		cfg, err := marshal(map[string]any{"$schema": "https://opencode.ai/config.json", "mcp": map[string]any{MCPServerName: map[string]any{
			"type": "remote", "url": m.URL, "enabled": true, "oauth": false,
			"headers": headers(func(name string) string { return "{env:" + name + "}" })}}})
		return MCPConfig{Env: append(env, "OPENCODE_CONFIG_CONTENT="+string(cfg))}, err
	case ACP:
		return MCPConfig{Servers: []MCPServer{m.acpServer(headers)}}, nil
	}
	return MCPConfig{}, fmt.Errorf("runner %q: not one of %v", runner, Runners)
}

// marshal is JSON without HTML escaping, so a URL reads as written (and
// is a TOML basic string too, for Codex's -c).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding the MCP configuration: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
