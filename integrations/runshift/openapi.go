package runshift

import (
	"net/http"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

func spec() httpapi.Spec {
	return httpapi.Spec{
		Codes:   map[task.Code]int{CodeBudgetExceeded: http.StatusPaymentRequired},
		Schemas: withBudgets(schemas()),
	}
}

func withBudgets(s map[string]any) map[string]any {
	budgetSchemas(s)
	return s
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonBody(schema map[string]any, desc string) map[string]any {
	return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
}

func errResp(desc string) map[string]any { return jsonBody(ref("Error"), desc) }

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func signalOp(id, summary string) map[string]any {
	return map[string]any{
		"operationId": id,
		"summary":     summary,
		"description": "One JSON object per agent run, runshift's AMP v1.0 payload. The bearer token is the agent's key " +
			"(gate.agents: key_env), not an API token. The signal is recorded before any gate fires. No gate: 200 approved. " +
			"A gate (the agent set gate_required and gate.rules confirm, a rule says always, or a budget is at 80 %): 202 pending " +
			"until an admin decides; the resolution is then POSTed, signed, to webhook_url. A run_id posted before answers with " +
			"its gate as it stands and changes nothing; the same run_id with another body is a conflict (409). Run ids are per agent.",
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref("Signal")}}},
		"responses": map[string]any{
			"200": jsonBody(ref("SignalReply"), "No gate (approved), or a duplicate run_id whose gate is resolved."),
			"202": jsonBody(ref("SignalReply"), "Gated: pending until an admin decides."),
			"400": errResp("Invalid signal (code invalid); fields names each field at fault."),
			"401": errResp("No registered agent's key (code unauthenticated)."),
			"402": errResp("A budget the signal counts against is spent (code budget_exceeded); it stays so until the period ends or an admin raises it (POST /v1/budgets/{key}/raise)."),
			"403": errResp("agent_id is not the key's agent, the project is not the agent's, or task_id names a task whose plan does not list the agent in tech_constraints.gate_agents (code forbidden)."),
			"409": errResp("run_id was posted before by this agent with another body (code conflict)."),
			"413": errResp("The body is larger than 256 KiB (code too_large)."),
			"415": errResp("The body is not application/json (code unsupported_media_type)."),
			"500": errResp("A fault of the server (code internal)."),
			"503": errResp("Temporal or the SSOT did not answer (code unavailable); post the signal again."),
		},
	}
}

func signalStatusOp() map[string]any {
	return map[string]any{
		"operationId": "getSignal",
		"summary":     "Where an agent's run stands, by its key",
		"description": "The bearer token is the agent's key. Answers as posting the run's signal again would, without posting it: the gate's status. Another agent's run answers 404.",
		"parameters": []any{map[string]any{"name": "run_id", "in": "path", "required": true, "schema": map[string]any{"type": "string"},
			"description": "The run_id of the signal."}},
		"responses": map[string]any{
			"200": jsonBody(ref("SignalReply"), "The run's gate: pending, approved or rejected."),
			"401": errResp("No registered agent's key (code unauthenticated)."),
			"404": errResp("No signal of this agent has this run_id (code not_found)."),
			"500": errResp("A fault of the server (code internal)."),
		},
	}
}

func showOp() map[string]any {
	return map[string]any{
		"operationId": "getGate",
		"summary":     "Show a gate",
		"parameters": []any{map[string]any{"name": "gate_id", "in": "path", "required": true, "schema": map[string]any{"type": "string"},
			"description": "The gate_id a signal's reply named."}},
		"responses": map[string]any{
			"200": jsonBody(ref("Gate"), "The gate, with every callback attempt, the signal's artifacts and the agent's latest signals."),
			"401": errResp("No valid bearer token (code unauthenticated)."),
			"404": errResp("No such gate (code not_found)."),
			"500": errResp("A fault of the server (code internal)."),
		},
	}
}

func listOp() map[string]any {
	q := func(name, desc string, schema map[string]any) map[string]any {
		return map[string]any{"name": name, "in": "query", "description": desc, "schema": schema}
	}
	return map[string]any{
		"operationId": "getGates",
		"summary":     "List gates, newest first",
		"parameters": []any{
			q("agent", "Only gates of this agent.", map[string]any{"type": "string"}),
			q("project", "Only gates of this project.", map[string]any{"type": "string"}),
			q("status", "Only gates with this status.", map[string]any{"type": "string", "enum": []any{"pending", "approved", "rejected"}}),
			q("run_id", "Only the gate of this run.", map[string]any{"type": "string"}),
			q("limit", "At most this many items in the page; from 1 to 1000 (outside: 400 naming limit).",
				map[string]any{"type": "integer", "minimum": 1, "maximum": MaxListLimit, "default": DefaultListLimit}),
			q("cursor", "The next_cursor of the previous page, opaque; absent reads the first page.", map[string]any{"type": "string"}),
		},
		"responses": map[string]any{
			"200": jsonBody(ref("GateList"), "OK"),
			"400": errResp("Invalid input (code invalid); fields names each field at fault."),
			"401": errResp("No valid bearer token (code unauthenticated)."),
			"500": errResp("A fault of the server (code internal)."),
		},
	}
}

func schemas() map[string]any {
	num := func(desc string) map[string]any {
		return map[string]any{"type": "number", "minimum": 0, "description": desc}
	}
	integer := func(desc string) map[string]any {
		return map[string]any{"type": "integer", "minimum": 0, "description": desc}
	}
	when := map[string]any{"type": "string", "format": "date-time"}
	cost := map[string]any{"type": "object", "properties": map[string]any{
		"model": str("The model."), "input_tokens": integer("Input tokens."), "output_tokens": integer("Output tokens."),
		"reported_usd": num("The agent's cost_usd."), "computed_usd": num("The cost from the pricing table (model names normalised: case, provider prefix, date suffix); a model it does not name costs the default price (the \"*\" entry of pricing.models, else the table's dearest)."),
		"mismatch": map[string]any{"type": "boolean", "description": "The reported cost differs from the computed one by more than 10 %."},
	}}
	return map[string]any{
		"Signal": map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required": []any{"amp_version", "agent_id", "run_id", "status", "summary", "model", "input_tokens", "output_tokens",
				"cost_usd", "gate_required", "started_at", "completed_at"},
			"properties": map[string]any{
				"amp_version": map[string]any{"type": "string", "enum": []any{"1.0"}},
				"agent_id":    map[string]any{"type": "string", "maxLength": MaxIDLen, "description": "The key's agent."},
				"run_id":      map[string]any{"type": "string", "maxLength": MaxIDLen, "description": "Unique per run of this agent: the same signal posted again changes nothing; the run_id with another body is 409."},
				"project_id":  map[string]any{"type": "string", "maxLength": MaxIDLen},
				"task_id":     map[string]any{"type": "string", "maxLength": MaxIDLen, "description": "An AMP task the cost counts against (ampflow's extension): the signal that passes the budget_usd of its plan's tech_constraints suspends it. The plan's tech_constraints.gate_agents must list the agent (or \"*\"), else 403; unknown: 400."},
				"status":      map[string]any{"type": "string", "enum": []any{"completed", "failed", "interrupted"}, "description": "failed: put metadata.error_code and metadata.error_message when known."},
				"summary":     map[string]any{"type": "string", "maxLength": MaxSummary, "description": "What the agent did."},
				"proposed_action": map[string]any{"type": []any{"string", "null"}, "maxLength": MaxProposedAction,
					"description": "What happens if the operator approves; required when gate_required is true."},
				"artifacts":     map[string]any{"type": "array", "maxItems": MaxArtifacts, "items": ref("SignalArtifact"), "description": "Each at most 64 KiB of JSON."},
				"model":         map[string]any{"type": "string", "maxLength": MaxIDLen},
				"input_tokens":  integer("Tokens consumed as input."),
				"output_tokens": integer("Tokens generated."),
				"cost_usd":      num("The agent's cost; ampflow recomputes it from pricing.models and flags a difference over 10 %."),
				"gate_required": map[string]any{"type": "boolean"},
				"started_at":    when,
				"completed_at":  map[string]any{"type": "string", "format": "date-time", "description": "Not before started_at."},
				"metadata":      map[string]any{"type": []any{"object", "null"}, "description": "At most 16 KiB of JSON."},
				"webhook_url":   map[string]any{"type": []any{"string", "null"}, "maxLength": MaxURLLen, "description": "Receives the signed resolution; its host must be in gate.webhook_allow."},
			},
		},
		"SignalArtifact": map[string]any{
			"type":        "object",
			"description": "runshift's artifact: what the run produced, kinded by type; ampflow keeps it as posted.",
			"properties": map[string]any{
				"type":    str("What the content is: text, url, file, json, …"),
				"content": map[string]any{"type": []any{"string", "object", "array", "number", "boolean"}, "description": "The artifact itself: text, or JSON for type json."},
				"name":    str("A label."),
			},
		},
		"SignalReply": map[string]any{
			"type":     "object",
			"required": []any{"status", "gate_id", "message"},
			"properties": map[string]any{
				"status":    map[string]any{"type": "string", "enum": []any{"pending", "approved", "rejected"}},
				"gate_id":   str("The gate's id (also for signals that needed no gate)."),
				"message":   str("What happened, for people."),
				"duplicate": map[string]any{"type": "boolean", "description": "The run_id was posted before."},
			},
		},
		"Gate": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"gate_id": str(""), "kind": map[string]any{"type": "string", "enum": []any{"signal", "contract"}},
				"status": map[string]any{"type": "string", "enum": []any{"pending", "approved", "rejected"}},
				"gated":  map[string]any{"type": "boolean", "description": "A gate fired; false: approved with no gate."},
				"run_id": str(""), "agent_id": str(""), "project_id": str(""), "task_id": str(""),
				"summary": str(""), "proposed_action": str(""), "cost": cost,
				"cost_usd": num("What counts against budgets: the computed cost when the model is priced, else the reported one or the default price's cost, whichever is more."),
				"reasons":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Why the gate fired."},
				"contract": map[string]any{"type": "object", "description": "The contract of a contract gate.",
					"required": []any{"id", "primitive", "parameters", "digest", "level", "minimum_handling"},
					"properties": map[string]any{"id": str("The contract's id (cnt_…)."), "primitive": str("The catalog's primitive."),
						"parameters": map[string]any{"type": "object", "description": "The contract's parameter values by name.",
							"additionalProperties": map[string]any{"type": []any{"string", "number", "boolean", "array", "object"}}}, "digest": str("What an approval approves: the contract's digest."),
						"level": str("The risk level."), "minimum_handling": str("human_required or strict_confirm.")}},
				"received_at": when, "resolved_at": when, "resolved_by": str("Who decided; ampflow when it expired."),
				"callback": map[string]any{"type": "string", "enum": []any{"none", "waiting", "delivered", "failed"}},
				"callback_attempts": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
					"gate_id": str(""), "attempt": integer(""), "at": when, "status_code": integer(""), "error": str(""),
				}}},
				"artifacts": map[string]any{"type": "array", "maxItems": MaxArtifacts, "items": ref("SignalArtifact"),
					"description": "The signal's artifacts as posted (GET /v1/gates/{gate_id} only)."},
				"agent_history": map[string]any{"type": "array", "maxItems": MaxHistory, "description": "The agent's latest other signals, newest first (GET /v1/gates/{gate_id} only).",
					"items": map[string]any{"type": "object", "properties": map[string]any{
						"gate_id": str(""), "run_id": str(""), "status": map[string]any{"type": "string", "enum": []any{"pending", "approved", "rejected"}},
						"gated": map[string]any{"type": "boolean"}, "cost_usd": num(""), "received_at": when, "proposed_action": str("Clipped to 200 characters."),
					}}},
			},
		},
		"GateList": map[string]any{
			"type":     "object",
			"required": []any{"gates"},
			"properties": map[string]any{
				"gates":       map[string]any{"type": "array", "items": ref("Gate")},
				"next_cursor": str("Absent on the last page."),
			},
		},
	}
}
