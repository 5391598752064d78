package toolcalls

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonBody(name, desc string) map[string]any {
	return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": ref(name)}}}
}

func errBody(desc string) map[string]any { return jsonBody("Error", desc) }

var waitParam = map[string]any{"name": "wait", "in": "query", "required": false,
	"description": "Long poll: wait up to this long (a duration such as \"30s\", at most 60s) for an ask's answer.",
	"schema":      map[string]any{"type": "string"}}

func postOp() map[string]any {
	return map[string]any{
		"operationId": "decideToolCall",
		"tags":        []any{"Tool calls"},
		"summary":     "Decide an agent CLI's tool call before it runs",
		"description": "Evaluates tools.rules (docs/tools.md) and records the call in the task's chain. " +
			"allow and deny answer at once (deny with the rule's reason); ask raises a tool_call decision for the task's admins " +
			"(options allow_once, allow_tool, deny; quorum by the rule's risk; denied when nobody answers within tools.ask_timeout plus tools.park_timeout) " +
			"and answers 202 with decision pending, or the outcome when it comes within wait. The same call asked again while its ask is open, " +
			"or again once the ask of a parked run was answered, is that call (same id, no new record). Any token.",
		"parameters":  []any{waitParam},
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref("ToolCallRequest")}}},
		"responses": map[string]any{
			"200": jsonBody("ToolCall", "Decided: allow or deny."),
			"202": jsonBody("ToolCall", "Asked: the admins have yet to answer; poll GET /v1/tool-calls/{id}."),
			"404": errBody("No such task (code not_found)."),
			"409": errBody("The task has ended (code task_ended)."),
			"503": errBody("Temporal or the worker did not answer (code unavailable)."),
		},
	}
}

func getOp() map[string]any {
	return map[string]any{
		"operationId": "getToolCall",
		"tags":        []any{"Tool calls"},
		"summary":     "Read a tool call, waiting for an ask's answer",
		"parameters": []any{
			map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}, "description": "The tool call's id, <task_id>-tc<n>."},
			waitParam,
		},
		"responses": map[string]any{
			"200": jsonBody("ToolCall", "Decided: allow or deny."),
			"202": jsonBody("ToolCall", "Still asked."),
			"400": errBody("Not a tool call id (code invalid)."),
			"404": errBody("No such tool call (code not_found)."),
			"503": errBody("The SSOT is not available (code unavailable)."),
		},
	}
}

func hookOp() map[string]any {
	query := func(name, desc string) map[string]any {
		return map[string]any{"name": name, "in": "query", "required": false, "schema": map[string]any{"type": "string"}, "description": desc}
	}
	return map[string]any{
		"operationId": "decideHookCall",
		"tags":        []any{"Tool calls"},
		"summary":     "Decide a tool call a CLI's hook posts, answered in the CLI's hook format",
		"description": "The body is the CLI's own hook input (Claude Code's PreToolUse, ampflow's OpenCode plugin's call). " +
			"Decided as POST /v1/tool-calls, an ask waited for; an agent run's ask still open at tools.ask_timeout parks the run. " +
			"The answer is Claude Code's hookSpecificOutput (permissionDecision allow, deny or defer) for claude and codex, " +
			"{decision, reason} for gemini, opencode and acp, {} for a call tools.default allowed. Any token; a run's credential names the task.",
		"parameters": []any{
			map[string]any{"name": "cli", "in": "path", "required": true, "schema": map[string]any{"type": "string"}, "description": "claude, codex, gemini, opencode or acp."},
			query("task", "The task; the run credential's when empty."),
			query("worktree", "Where the agent may write; the call's cwd when empty."),
		},
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
			"type": "object", "required": []any{"tool_name"},
			"properties": map[string]any{"tool_name": str("The tool."), "tool_input": map[string]any{"type": "object"}, "cwd": str("Where the tool runs."),
				"session_id": str("The CLI's session."), "transcript_path": str("Claude Code's transcript."), "tool_use_id": str("Claude Code's call id.")},
		}}}},
		"responses": map[string]any{
			"200": map[string]any{"description": "The answer in the CLI's hook format.", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}},
			"400": errBody("No tool_name, an unknown CLI or task (code invalid)."),
			"403": errBody("Another task than the run credential's (code forbidden)."),
			"404": errBody("No such task (code not_found)."),
		},
	}
}

func listOp() map[string]any {
	filter := func(name, desc string) map[string]any {
		return map[string]any{"name": name, "in": "query", "required": false, "schema": map[string]any{"type": "string"}, "description": desc}
	}
	return map[string]any{
		"operationId": "listTaskToolCalls",
		"tags":        []any{"Tool calls"},
		"summary":     "List a task's tool calls from its chain",
		"description": "Every tool call of the task's agents, allowed, denied or asked, in the order made; an ask as it was decided.",
		"parameters": []any{
			map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}, "description": "The task id."},
			filter("tool", "Only calls of this tool (the CLI's name)."),
			filter("kind", "Only calls of this kind: shell, edit, read, fetch, mcp, other."),
			filter("decision", "Only calls decided so: allow, deny, pending."),
			filter("agent", "Only calls of this agent (its token's name)."),
		},
		"responses": map[string]any{
			"200": jsonBody("ToolCallList", "The task's tool calls."),
			"400": errBody("Not a task id (code invalid)."),
			"404": errBody("No such task (code not_found)."),
			"503": errBody("The SSOT is not available (code unavailable)."),
		},
	}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func schemas() map[string]any {
	toolCall := map[string]any{
		"type":     "object",
		"required": []any{"id", "task_id", "tool", "kind", "input", "input_bytes", "input_digest", "action", "decision", "at"},
		"properties": map[string]any{
			"id":              str("<task_id>-tc<n>."),
			"task_id":         str("The task."),
			"agent":           str("Who asked: the token's name."),
			"role":            map[string]any{"type": "string", "enum": []any{"executor", "reviewer"}, "description": "The role of the run that asked, from its run credential; absent for a call made with an API token."},
			"cli":             str("claude, codex, gemini or opencode."),
			"tool":            str("The tool, as the CLI names it."),
			"kind":            map[string]any{"type": "string", "enum": []any{"shell", "edit", "read", "fetch", "mcp", "other"}},
			"input":           str("The input as canonical JSON, at most 4096 bytes."),
			"input_truncated": map[string]any{"type": "boolean"},
			"input_bytes":     map[string]any{"type": "integer"},
			"input_digest":    str("SHA-256 (hex) of the whole canonical input."),
			"cwd":             str("Where the tool runs."),
			"worktree":        str("Where the agent may write."),
			"rule":            str("The rule that matched; empty for tools.default."),
			"action":          map[string]any{"type": "string", "enum": []any{"allow", "deny", "ask"}, "description": "What the policy said."},
			"reason":          str("Why: the rule's reason, or the admin's note on a deny."),
			"risk":            str("The rule's risk: low, medium or high."),
			"ask_timeout":     str("How long the CLI waits for an ask's answer before a runner's run is parked, as text: 10m."),
			"park_timeout":    str("How long an ask stays open after ask_timeout before it is denied, as text: 24h."),
			"decision":        map[string]any{"type": "string", "enum": []any{"allow", "deny", "pending"}},
			"by":              str("policy, the admin who answered, or ampflow (expired or withdrawn)."),
			"channel":         str("Where the admin answered."),
			"option":          str("The admin's option: allow_once, allow_tool, deny."),
			"note":            str("The admin's note."),
			"decision_id":     str("The tool_call decision, for an ask."),
			"digest":          str("The decision's digest: over the task, tool, input and cwd."),
			"at":              map[string]any{"type": "string", "format": "date-time"},
			"decided_at":      map[string]any{"type": "string", "format": "date-time"},
		},
	}
	return map[string]any{
		"ToolCallRequest": map[string]any{
			"type":     "object",
			"required": []any{"task_id", "tool"},
			"properties": map[string]any{
				"task_id":  str("The task the agent works on."),
				"cli":      str("claude, codex, gemini or opencode: what the tool names mean."),
				"tool":     str("The tool, as the CLI names it (Bash, Write, exec_command, …)."),
				"input":    map[string]any{"type": "object", "description": "The tool's input as the CLI gave it."},
				"cwd":      str("Where the tool runs."),
				"worktree": str("Where the agent may write; cwd when empty."),
			},
		},
		"ToolCall": toolCall,
		"ToolCallList": map[string]any{
			"type": "object", "required": []any{"tool_calls"},
			"properties": map[string]any{"tool_calls": map[string]any{"type": "array", "items": ref("ToolCall")}},
		},
	}
}
