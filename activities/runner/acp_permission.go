package runner

import (
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"
)

// MCPServer is an MCP server given to an ACP agent's session: ampflow's,
// over HTTP. ACP takes header values as they are, so Headers holds the
// credentials themselves: they go to the agent on its standard input,
// never on a command line or in a file.
type MCPServer struct {
	Name    string
	URL     string
	Headers map[string]string
}

// acpServer is m for session/new: the token and agent key in its headers.
func (m MCP) acpServer(headers func(ref func(string) string) map[string]string) MCPServer {
	values := map[string]string{MCPTokenEnv: m.Token, MCPAgentKeyEnv: m.AgentKey}
	return MCPServer{Name: MCPServerName, URL: m.URL, Headers: headers(func(name string) string { return values[name] })}
}

// PermissionRequest is an ACP agent's session/request_permission: a tool
// call it asks to make.
type PermissionRequest struct {
	SessionID  string
	ToolCallID string
	// Tool is the call's ACP kind (execute, edit, read, fetch, …), the
	// name the tool policy knows ACP tools by (toolpolicy.ToolNames).
	Tool string
	// Title is the agent's line for the call ("Run git status").
	Title string
	// Input is the call's raw input as JSON, or {"title": Title} when the
	// agent sends none.
	Input json.RawMessage
	// Options are the agent's option kinds: allow_once, allow_always,
	// reject_once, reject_always.
	Options []string
}

// PermissionAnswer decides a PermissionRequest. A deny selects the
// agent's reject_once option (reject_always only when it offers no
// other), never "cancelled", which some agents take as the end of the
// whole turn; Reason then reaches the model in a turn of its own after
// the agent's (ACP gives a rejection no text).
type PermissionAnswer struct {
	Allow  bool
	Reason string
}

// permissionRequest reads the SDK's request.
func permissionRequest(p acp.RequestPermissionRequest) PermissionRequest {
	tc := p.ToolCall
	req := PermissionRequest{SessionID: string(p.SessionId), ToolCallID: string(tc.ToolCallId), Tool: string(acp.ToolKindOther)}
	if tc.Kind != nil {
		req.Tool = acpTool(*tc.Kind)
	}
	if tc.Title != nil {
		req.Title = *tc.Title
	}
	req.Input = acpInput(tc.RawInput, req.Title)
	for _, o := range p.Options {
		req.Options = append(req.Options, string(o.Kind))
	}
	return req
}

// selectOption picks the option that carries allow: the one-time option
// of that side, else the lasting one. ok is false when the agent offers
// neither.
func selectOption(opts []acp.PermissionOption, allow bool) (acp.PermissionOptionId, bool) {
	prefer := []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways}
	if allow {
		prefer = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways}
	}
	for _, k := range prefer {
		for _, o := range opts {
			if o.Kind == k {
				return o.OptionId, true
			}
		}
	}
	return "", false
}
