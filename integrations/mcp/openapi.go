package mcp

// operationDoc is POST /mcp in the OpenAPI document.
func operationDoc() map[string]any {
	id := map[string]any{"type": []any{"string", "integer", "null"}, "description": "The request's id; absent in a notification."}
	// params, result and error.data are MCP's per method: the MCP
	// specification's schema types them, not ampflow.
	request := map[string]any{"type": "object", "description": "A JSON-RPC 2.0 request or notification of MCP.",
		"required": []any{"jsonrpc", "method"},
		"properties": map[string]any{"jsonrpc": map[string]any{"type": "string", "enum": []any{"2.0"}}, "id": id,
			"method": map[string]any{"type": "string", "description": "initialize, notifications/initialized, ping, tools/list, tools/call, …"},
			"params": map[string]any{"type": "object", "description": "The method's parameters, as MCP defines them (tools/call: name, arguments).",
				"properties": map[string]any{"name": map[string]any{"type": "string"}, "arguments": map[string]any{"type": "object",
					"description": "The tool's input, as its inputSchema in tools/list says.", "additionalProperties": map[string]any{"description": "Any JSON value the tool's inputSchema allows."}}}}}}
	response := map[string]any{"type": "object", "description": "A JSON-RPC 2.0 response: result or error.",
		"required": []any{"jsonrpc", "id"},
		"properties": map[string]any{"jsonrpc": map[string]any{"type": "string", "enum": []any{"2.0"}}, "id": id,
			"result": map[string]any{"type": "object", "description": "The method's result, as MCP defines it (tools/list: tools; tools/call: content, isError, _meta).",
				"properties": map[string]any{"tools": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
					"name": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}, "inputSchema": map[string]any{"type": "object", "description": "A JSON Schema.", "additionalProperties": map[string]any{"description": "JSON Schema keywords."}}}}},
					"content": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"type": map[string]any{"type": "string"}, "text": map[string]any{"type": "string"}}}},
					"isError": map[string]any{"type": "boolean"}}},
			"error": map[string]any{"type": "object", "required": []any{"code", "message"}, "properties": map[string]any{
				"code": map[string]any{"type": "integer"}, "message": map[string]any{"type": "string"}}}}}
	rpc := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{
			"schema": response}}}
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
			"schema": request}}},
		"responses": map[string]any{
			"200": rpc("The JSON-RPC response."),
			"202": map[string]any{"description": "A notification or response taken; no body."},
			"400": map[string]any{"description": "Not a JSON-RPC message, an Accept without application/json and text/event-stream, or an unsupported MCP-Protocol-Version (text)."},
		},
	}
}
