package mcp

// operationDoc is POST /mcp in the OpenAPI document.
func operationDoc() map[string]any {
	rpc := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"type": "object", "description": "A JSON-RPC 2.0 message."}}}}
	}
	return map[string]any{
		"operationId": "postMCP",
		"tags":        []any{"mcp"},
		"summary":     "Model Context Protocol (streamable HTTP)",
		"description": "ampflow's API as MCP tools, stateless streamable HTTP: each POST carries one JSON-RPC message " +
			"(initialize, tools/list, tools/call, …) with Accept: application/json, text/event-stream, and is answered " +
			"with JSON. GET and DELETE are not served (405): the server keeps no sessions and sends no messages of its own. " +
			"Every tool calls an API route in the process with this request's bearer token, so it acts only as that " +
			"token's agent and its errors are the route's ({\"error\":{\"code\",\"message\"}} as the tool result's content, " +
			"isError true, the HTTP status in _meta.http_status). The gate's tools (signal, request_approval, " +
			"approval_status, decide, contract, execute) present the agent key of the X-Ampflow-Agent-Key header. See docs/mcp.md.",
		"parameters": []any{map[string]any{"name": AgentKeyHeader, "in": "header", "required": false,
			"description": "The agent's gate key (gate.agents), for the gate's and contracts' tools.",
			"schema":      map[string]any{"type": "string"}}},
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"type": "object", "description": "A JSON-RPC 2.0 request or notification of MCP."}}}},
		"responses": map[string]any{
			"200": rpc("The JSON-RPC response."),
			"202": map[string]any{"description": "A notification or response taken; no body."},
			"400": map[string]any{"description": "Not a JSON-RPC message, an Accept without application/json and text/event-stream, or an unsupported MCP-Protocol-Version (text)."},
		},
	}
}
