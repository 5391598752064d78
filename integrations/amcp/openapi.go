package amcp

// The OpenAPI operations and schemas of the contract routes.

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

func jsonBody(schema obj) obj {
	return obj{"required": true, "content": obj{"application/json": obj{"schema": schema}}}
}

func answer(desc string, schema obj) obj {
	return obj{"description": desc, "content": obj{"application/json": obj{"schema": schema}}}
}

func refusal(desc string) obj { return answer(desc, ref("Error")) }

// agentKey: the routes take a bearer token, an agent key of gate.agents.

func common() obj {
	return obj{
		"401": refusal("No agent key, or one gate.agents does not hold (code UNAUTHORIZED)."),
		"429": obj{
			"description": "More requests from this key than gate.contract_rate a minute (code RATE_LIMIT_EXCEEDED).",
			"headers": obj{
				"Retry-After":           obj{"description": "Seconds until a request is admitted again.", "schema": obj{"type": "integer"}},
				"X-RateLimit-Limit":     obj{"description": "Requests a minute for this key.", "schema": obj{"type": "integer"}},
				"X-RateLimit-Remaining": obj{"description": "Requests left now.", "schema": obj{"type": "integer"}},
				"X-RateLimit-Reset":     obj{"description": "Seconds until the allowance is whole again.", "schema": obj{"type": "integer"}},
			},
			"content": obj{"application/json": obj{"schema": ref("Error")}},
		},
		"503": refusal("Contracts are not served (no signing secret), or a gate could not be opened (code PROVIDER_UNAVAILABLE)."),
	}
}

// guarded are the refusals of the API's guard and body decoding, which
// every route passes: a cross-site Origin, a body that is not JSON, a
// Host that is not loopback on an open API; and on routes with a body,
// one that is too large or not the request's JSON.
func guarded(body bool) obj {
	o := obj{
		"403": refusal("A cross-site Origin (code forbidden)."),
		"415": refusal("A body that is not application/json (code unsupported_media_type)."),
		"421": refusal("With no API tokens configured, a Host that is not loopback (code misdirected_request)."),
	}
	if body {
		o["400"] = refusal("Invalid input (code invalid): a body that is not one JSON object of the request's fields; fields names each field at fault.")
		o["413"] = refusal("The body is too large (code too_large).")
	}
	return o
}

func with(base obj, more obj) obj {
	for k, v := range more {
		base[k] = v
	}
	return base
}

func decideOperation() obj {
	return obj{
		"operationId": "postDecide",
		"summary":     "Resolve an intent to a primitive and issue a risk contract (AMCP)",
		"description": "Agent key (gate.agents) as a bearer token. Resolution is deterministic keyword scoring over the primitive catalog (gate.primitives): EXECUTE issues a contract (cnt_ and a UUID) bound by an HMAC-SHA256 signature to the primitive, its parameters, its risk and its expiry (gate.contract_ttl); CLARIFY asks one question between two close matches; INSUFFICIENT names the missing parameters; NO_MATCH says why. A contract whose minimumHandling is strict_confirm or human_required opens a gate (state awaiting_approval, gateId) that the admins decide like any decision.",
		"requestBody": jsonBody(ref("AmcpDecideRequest")),
		"responses": with(with(common(), guarded(true)), obj{
			"200": answer("The resolution; contractId, primitiveRiskScore, risk and expiresAt are set on EXECUTE.", ref("AmcpDecideResponse")),
			"400": refusal("Invalid input (code invalid), or an intent over 512 characters (code INTENT_TOO_LONG)."),
		}),
	}
}

func contractOperation() obj {
	return obj{
		"operationId": "getContract",
		"summary":     "Show a contract's state and, once approved, its approvalToken",
		"description": "Agent key as a bearer token; only the key that decided may read the contract. state is issued, awaiting_approval, approved, rejected, redeemed or expired.",
		"parameters": []any{obj{"name": "contractId", "in": "path", "required": true,
			"description": "The contract's id as POST /v1/decide returned it.", "schema": obj{"type": "string", "maxLength": 200}}},
		"responses": with(with(common(), guarded(false)), obj{
			"200": answer("The contract.", ref("AmcpContract")),
			"404": refusal("No such contract under this key (code CONTRACT_NOT_FOUND)."),
			"422": refusal("The stored contract does not verify against its signature, or its approval against its gate's chain (code CONTRACT_INVALID)."),
		}),
	}
}

func executeOperation() obj {
	return obj{
		"operationId": "postExecute",
		"summary":     "Redeem a contract for its execution blueprint (once)",
		"description": "Agent key as a bearer token. Checks, in order: expiry (CONTRACT_EXPIRED whatever else is wrong), signature (CONTRACT_INVALID), redemption (CONTRACT_ALREADY_REDEEMED), approval (APPROVAL_REQUIRED when strict_confirm or human_required and the gate has not approved or the approvalToken is missing or wrong). Redeeming is one atomic update, so of concurrent calls one wins. ampflow does not run the blueprint; the agent does.",
		"requestBody": jsonBody(ref("AmcpExecuteRequest")),
		"responses": with(with(common(), guarded(true)), obj{
			"200": answer("The blueprint; the contract is redeemed.", ref("AmcpBlueprint")),
			"400": refusal("Invalid input (code invalid)."),
			"403": refusal("An approval is required and missing or invalid (code APPROVAL_REQUIRED), or a cross-site Origin (code forbidden)."),
			"404": refusal("No such contract under this key (code CONTRACT_NOT_FOUND)."),
			"409": refusal("The contract changed while it was redeemed (code conflict); try again."),
			"410": refusal("The contract expired (code CONTRACT_EXPIRED) or was redeemed already (code CONTRACT_ALREADY_REDEEMED)."),
			"422": refusal("The stored contract does not verify against its signature, or its approval against its gate's chain (code CONTRACT_INVALID)."),
		}),
	}
}

func str(desc string) obj { return obj{"type": "string", "description": desc} }
func strs(desc string) obj {
	return obj{"type": "array", "items": obj{"type": "string"}, "description": desc}
}

var handlingEnum = []any{"allow", "log", "confirm", "strict_confirm", "human_required"}

func schemas() obj {
	return withParameters(catalogSchemas())
}

// withParameters adds AmcpParameters: a primitive's parameter values by
// name, as the caller gave them.
func withParameters(s obj) obj {
	s["AmcpParameters"] = obj{"type": "object",
		"description":          "The primitive's parameter values by name (the catalog names each and where it goes: path, query, body or arg); at most 16 KiB of JSON. A value is any JSON the primitive takes: a string, number, boolean, array or object.",
		"additionalProperties": obj{"type": []any{"string", "number", "boolean", "array", "object"}}}
	return s
}

func catalogSchemas() obj {
	stateEnum := []any{"issued", "awaiting_approval", "approved", "rejected", "redeemed", "expired"}
	spec := obj{"type": "object", "additionalProperties": obj{"type": "object", "properties": obj{
		"type": obj{"type": "string"}, "required": obj{"type": "boolean"}, "description": obj{"type": "string"}}}}
	return obj{
		"AmcpDecideRequest": obj{
			"type": "object", "required": []any{"intent"}, "additionalProperties": false,
			"properties": obj{
				"intent": obj{"type": "string", "maxLength": 512, "description": "What the agent wants done, in words."},
				"context": obj{"type": "object", "additionalProperties": false, "properties": obj{
					"provider":        str("Keep the resolution to one provider's primitives (git, github, npm, deploy, db, fs, slack, http)."),
					"parameters":      ref("AmcpParameters"),
					"minimumHandling": obj{"type": "string", "enum": handlingEnum, "description": "Stricter handling than the primitive's; a lower one changes nothing (escalation only)."},
				}},
				"sessionId": obj{"type": "string", "maxLength": 200, "description": "The caller's session, kept with the contract."},
			},
		},
		"AmcpRisk": obj{
			"type": "object", "required": []any{"level", "minimumHandling", "reasoning", "overridePolicy"},
			"properties": obj{
				"level":           str("The score's level in the catalog's scoring.levels."),
				"minimumHandling": obj{"type": "string", "enum": handlingEnum},
				"reasoning":       strs("Signals set, compound:<rule>, multiplier:<name>(<factor>x), escalation:<by>(<handling>)."),
				"overridePolicy":  obj{"type": "string", "enum": []any{"escalation_only"}},
			},
		},
		"AmcpDecideResponse": obj{
			"type": "object", "required": []any{"decision"},
			"properties": obj{
				"decision":           obj{"type": "string", "enum": []any{"EXECUTE", "CLARIFY", "INSUFFICIENT", "NO_MATCH"}},
				"contractId":         str("cnt_ and a UUID (EXECUTE)."),
				"primitive":          str("The primitive (EXECUTE, INSUFFICIENT)."),
				"primitiveRiskScore": obj{"type": "integer", "minimum": 0, "maximum": 240},
				"risk":               ref("AmcpRisk"),
				"expiresAt":          obj{"type": "string", "format": "date-time"},
				"state":              obj{"type": "string", "enum": []any{"issued", "awaiting_approval"}},
				"gateId":             str("The gate deciding the contract, when it needs an approval."),
				"question":           str("One question between two close matches (CLARIFY)."),
				"candidates":         strs("The two close matches, best first (CLARIFY)."),
				"missing":            strs("The required parameters absent (INSUFFICIENT)."),
				"reason":             str("Why nothing matched (NO_MATCH)."),
			},
		},
		"AmcpContract": obj{
			"type":     "object",
			"required": []any{"contractId", "state", "primitive", "parameters", "primitiveRiskScore", "risk", "issuedAt", "expiresAt", "digest"},
			"properties": obj{
				"contractId":         obj{"type": "string"},
				"state":              obj{"type": "string", "enum": stateEnum},
				"primitive":          obj{"type": "string"},
				"parameters":         ref("AmcpParameters"),
				"primitiveRiskScore": obj{"type": "integer", "minimum": 0, "maximum": 240},
				"risk":               ref("AmcpRisk"),
				"sessionId":          obj{"type": "string"},
				"issuedAt":           obj{"type": "string", "format": "date-time"},
				"expiresAt":          obj{"type": "string", "format": "date-time"},
				"digest":             str("SHA-256 of the signed contract: what its approval approves."),
				"gateId":             obj{"type": "string"},
				"decidedBy":          str("Who approved or rejected it at its gate."),
				"approvalToken":      str("Set once approved: pass it to POST /v1/execute."),
				"redeemedAt":         obj{"type": "string", "format": "date-time"},
			},
		},
		"AmcpExecuteRequest": obj{
			"type": "object", "required": []any{"contractId"}, "additionalProperties": false,
			"properties": obj{
				"contractId":    obj{"type": "string"},
				"approvalToken": str("Required for strict_confirm and human_required contracts: GET /v1/contracts/{contractId} shows it once approved."),
			},
		},
		"AmcpBlueprint": obj{
			"type": "object", "required": []any{"contractId", "primitive", "parameters", "values", "executedAt"},
			"properties": obj{
				"contractId": obj{"type": "string"},
				"primitive":  obj{"type": "string"},
				"endpoint":   str("The URL to call, parameters in place (HTTP primitives)."),
				"method":     obj{"type": "string", "enum": []any{"GET", "POST", "PUT", "PATCH", "DELETE"}},
				"command":    strs("The command to run, parameters in place (command primitives)."),
				"parameters": obj{"type": "object", "properties": obj{"path": spec, "query": spec, "body": spec, "args": spec}},
				"values":     ref("AmcpParameters"),
				"auth": obj{"type": "object", "properties": obj{
					"type": obj{"type": "string", "enum": []any{"Bearer", "ApiKey", "OAuth2", "None"}}, "header": obj{"type": "string"}, "scopes": strs("")}},
				"contentType": obj{"type": "string"},
				"executedAt":  obj{"type": "string", "format": "date-time"},
			},
		},
	}
}
