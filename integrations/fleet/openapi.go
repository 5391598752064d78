package fleet

// The fleet route's OpenAPI operation and schemas.

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func errResp(desc string) map[string]any {
	return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": ref("Error")}}}
}

var opFleet = map[string]any{
	"operationId": "getFleet",
	"summary":     "List the runner hosts, their runs and their queues",
	"description": "Every worker that runs agent CLIs writes itself to the SSOT every 5 s: its runner.host, its runner.slots, the runs holding a slot (task, role, runner, what it does, for how long, its cost so far) and the runs waiting for one, in the order they will be served (higher task priority first, then the oldest). " +
		"A host that has not written itself for 30 s is listed with alive false; one silent for an hour is left out. running and queued count the runs of the hosts alive.",
	"tags": []string{"Fleet"},
	"responses": map[string]any{
		"200": map[string]any{"description": "OK", "content": map[string]any{"application/json": map[string]any{"schema": ref("FleetResponse")}}},
		"401": errResp("No valid bearer token (code unauthenticated)."),
		"403": errResp("The token's role may not do this (code forbidden): coordinators and admins read the fleet."),
		"503": errResp("The SSOT did not answer (code unavailable); retry."),
	},
}

func obj(required []string, props map[string]any) map[string]any {
	return map[string]any{"type": "object", "required": required, "properties": props}
}

func typed(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

var schemas = map[string]any{
	"FleetResponse": obj([]string{"hosts", "running", "queued"}, map[string]any{
		"hosts":   map[string]any{"type": "array", "items": ref("FleetHost"), "description": "The hosts, by name."},
		"running": typed("integer", "Runs holding a slot on the hosts alive."),
		"queued":  typed("integer", "Runs waiting for a slot on the hosts alive."),
	}),
	"FleetHost": obj([]string{"host", "alive", "slots", "in_use", "running", "queue", "started_at", "seen_at"}, map[string]any{
		"host":       typed("string", "The worker's runner.host (its machine's hostname by default)."),
		"alive":      typed("boolean", "False once the host has not written itself for 30 s."),
		"slots":      typed("integer", "runner.slots: the agent CLIs it runs at once."),
		"in_use":     typed("integer", "Slots held by a run."),
		"running":    map[string]any{"type": "array", "items": ref("FleetRun"), "description": "The runs holding a slot."},
		"queue":      map[string]any{"type": "array", "items": ref("FleetRun"), "description": "The runs waiting for a slot, in the order they will be served."},
		"started_at": map[string]any{"type": "string", "format": "date-time", "description": "When the worker started."},
		"seen_at":    map[string]any{"type": "string", "format": "date-time", "description": "When it last wrote itself."},
	}),
	"FleetRun": obj([]string{"task_id", "role", "runner", "priority", "queued_at", "cost_usd", "for_seconds"}, map[string]any{
		"task_id":     typed("string", "The task, or for a goal's planner the goal's workflow (goal-G-…)."),
		"role":        map[string]any{"type": "string", "enum": []string{"executor", "reviewer", "planner"}},
		"runner":      typed("string", "The agent CLI: claude, codex, gemini, opencode or acp."),
		"priority":    typed("integer", "The task's priority: the higher is served first."),
		"queued_at":   map[string]any{"type": "string", "format": "date-time", "description": "When the run asked for a slot."},
		"started_at":  map[string]any{"type": "string", "format": "date-time", "description": "When it got one; absent while it waits."},
		"step":        typed("string", "What it does: \"tool Bash\", \"thinking\", \"text\"…"),
		"cost_usd":    typed("number", "What it has cost so far, in dollars."),
		"account":     typed("string", "The runner's account the run uses (agents.<role>.accounts); absent without accounts."),
		"for_seconds": typed("number", "How long it has run, or waited, in seconds."),
	}),
}
