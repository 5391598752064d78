package aof

import (
	"fmt"

	"github.com/ampflow/ampflow/integrations/httpapi"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// The AOF routes' OpenAPI operations and schemas.

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonBody(schema map[string]any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func errResp(desc string) map[string]any {
	return map[string]any{"description": desc, "content": jsonBody(ref("Error"))}
}

// op builds an operation: its id, summary, request schema (empty for
// none), success status and schema, and its error answers.
func op(id, summary, description, req, okStatus, okSchema string, errs map[string]string) map[string]any {
	resp := map[string]any{okStatus: map[string]any{"description": "OK", "content": jsonBody(ref(okSchema))}}
	errs["401"] = "No valid bearer token (code unauthenticated)."
	if _, ok := errs["403"]; !ok {
		errs["403"] = "The token's role may not do this (code forbidden)."
	}
	if _, ok := errs["503"]; !ok {
		errs["503"] = "Temporal or the worker did not answer (code unavailable); retry."
	}
	for st, d := range errs {
		resp[st] = errResp(d)
	}
	o := map[string]any{"operationId": id, "summary": summary, "description": description, "tags": []string{"AOF/1"}, "responses": resp}
	if req != "" {
		o["requestBody"] = map[string]any{"required": true, "content": jsonBody(ref(req))}
	}
	return o
}

func withParams(o map[string]any, params ...map[string]any) map[string]any {
	o["parameters"] = params
	return o
}

func param(in, name, desc string, required bool) map[string]any {
	return map[string]any{"in": in, "name": name, "description": desc, "required": required, "schema": map[string]any{"type": "string"}}
}

var pathID = param("path", "id", "The task id, TASK-YYYY-MM-DD-NNN.", true)

var (
	opMessages = op("postAOFMessage", "Send an AOF/1 protocol message",
		"Takes the envelope object itself (protocol \"aof\"), or a received message {\"content\": text} whose text is the envelope as JSON or \"AOF/1 \" followed by it, checked in that order. "+
			"Valid messages are logged as protocol.message.received and handed to the task; rejections change nothing and are logged as protocol.message.rejected (reason invalid_json, invalid_envelope, task_not_found, taskId_mismatch), "+
			"protocol.message.unknown, or delegation.rejected (parent_not_found, nested_delegation, parent_conflict). A completion.report writes run_result.json; its transitions apply at the session's end or on a stale heartbeat.",
		"AOFMessageRequest", "200", "AOFResult", map[string]string{
			"400": "Rejected: invalid_json, invalid_envelope, taskId_mismatch or unknown_type.",
			"404": "Rejected: task_not_found, or parent_not_found for a handoff.request.",
			"403": "The token's role may not do this, or an executor's or reviewer's token names another agent than itself in fromAgent, payload.agentId or payload.fromAgent, or acts on a task that is not its own: a status update of a task it neither is assigned nor runs, a handoff.request not from the parent's assignee or running agent (or from the agent the task is handed to), a handoff reply of a task not handed to it (code forbidden, the message names the field).",
			"409": "Rejected: nested_delegation (the parent is a delegated task itself), parent_conflict (a handoff.request for a task linked to another parent already), or not_running (a completion.report for a task that is not in_progress, or from another agent than the one running it).",
		})
	opCreate = op("createAOFTask", "Create an AOF task",
		"Starts the task's workflow. taskId is allocated as TASK-<today>-NNN when absent.",
		"AOFCreateRequest", "201", "AOFTask", map[string]string{
			"400": "Invalid input (code invalid); fields names each field at fault.",
			"404": "parentTaskId names no task (code parent_not_found).",
			"409": "The task id is taken (code conflict), or the parent is a delegated task itself (code nested_delegation).",
		})
	opListTasks = withParams(op("listAOFTasks", "List AOF tasks: an agent's work",
		"By task id, those in status, assigned or dispatched to assignee (the task's assignee or its run's agentId; me is the token's own name). "+
			"With wait it long-polls as GET /v1/inbox does: it answers once the page has a task, or an empty page when the wait is over. "+
			"A page reads at most 10000 stored tasks: it may hold fewer than limit while next is set.",
		"", "200", "AOFTasksResponse", map[string]string{"400": "Invalid status, assignee, limit, cursor or wait (code invalid, naming the field); assignee=me without tokens."}),
		param("query", "assignee", "The agent whose work to list: a name, or me for the token's name.", false),
		param("query", "status", "Only tasks in this status: backlog, ready, in_progress, review, blocked or done.", false),
		param("query", "wait", "Long-poll up to this long (\"30s\" or whole seconds, at most the API's max wait, 60s by default) for a non-empty page.", false),
		param("query", "limit", "At most this many (default 100, at most 1000).", false),
		param("query", "cursor", "The next of the previous page.", false))
	opGetTask = withParams(op("getAOFTask", "Read an AOF task",
		"Its status, metadata.delegationDepth, work log, run artifacts (run.json, run_heartbeat.json, run_result.json) and handoff inputs.",
		"", "200", "AOFTaskView", map[string]string{"404": "No such task (code task_not_found)."}), pathID)
	opDispatch = withParams(op("dispatchAOFTask", "Dispatch a ready AOF task to an agent",
		"ready → in_progress: takes the lease of aof/<taskId> for agentId (its TTL the run's), writes run.json (metadata.leaseId) and the first run_heartbeat.json; the task expects a heartbeat before expiresAt (ttlMs, default 300000, at most a day). Each heartbeat renews the lease; the task leaving in_progress (session end, a stale reclaim, a status update) releases it. A repeat by the running agent changes nothing.",
		"AOFDispatchRequest", "200", "AOFResult", map[string]string{
			"400": "Invalid input (code invalid).",
			"404": "No such task (code task_not_found).",
			"409": "The task is not ready (code invalid_transition), or another agent holds its lease (code lease_held).",
			"503": "Temporal or the worker did not answer, or the lease could not be taken (code unavailable); retry.",
		}), pathID)
	opHeartbeat = withParams(op("heartbeatAOFTask", "Renew the running agent's heartbeat",
		"Updates run_heartbeat.json: beatCount + 1, expiresAt = now + ttlMs. Once expiresAt passes, the task applies its run result (reason stale_heartbeat_<outcome>) or, without one, goes back to ready (stale_heartbeat_reclaim).",
		"AOFHeartbeatRequest", "200", "AOFResult", map[string]string{
			"400": "Invalid input (code invalid).",
			"404": "No such task (code task_not_found).",
			"403": "The token's role may not do this, or an executor's or reviewer's token names another agentId than itself (code forbidden).",
			"409": "No run of this agent is in progress (code not_running).",
		}), pathID)
	opEvents = withParams(op("listAOFEvents", "List the logged AOF events",
		"Oldest first, of one task or of all; each with its type, taskId, actor, timestamp and payload (with its reason).",
		"", "200", "AOFEventsResponse", map[string]string{"400": "Invalid limit or cursor (code invalid)."}),
		param("query", "task_id", "Only this task's events.", false),
		param("query", "limit", "At most this many (default 100, at most 1000).", false),
		param("query", "cursor", "The next of the previous page.", false))
	opSessionEnd = op("endAOFSession", "End an agent session",
		"Applies the pending run result of every task in progress (of agentId's runs only, when given), as AOF's session_end hook; tasks with no such result are not touched, and at most 100 are applied a call (more: call again). An executor's or reviewer's token that leaves agentId out ends its own session; an admin's or a coordinator's ends every agent's runs; with no tokens configured agentId is required.",
		"AOFSessionEndRequest", "200", "AOFSessionEndResponse", map[string]string{"400": "Invalid input (code invalid), such as no agentId when the API has no tokens.",
			"403": "The token's role may not do this, or an executor's or reviewer's token names another agentId than itself (code forbidden): an agent ends only its own session."})
)

func obj(required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func strSchema(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

func strs(desc string) map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
}

var taskIDSchema = map[string]any{"type": "string", "pattern": `^TASK-\d{4}-\d{2}-\d{2}-\d{3}$`}

var statusEnum = map[string]any{"type": "string", "enum": []string{"backlog", "ready", "in_progress", "review", "blocked", "done"}}

// Spec is what the AOF routes add to the OpenAPI document.
func Spec() httpapi.Spec {
	schemas := map[string]any{
		"AOFMessageRequest": map[string]any{
			"description": "An AOF/1 envelope, or {\"content\": \"<envelope JSON>\"} or {\"content\": \"AOF/1 <envelope JSON>\"}.",
			"oneOf":       []any{ref("AOFEnvelope"), obj([]string{"content"}, map[string]any{"content": strSchema("The received message's text.")})},
		},
		"AOFEnvelope":         envelopeSchema(),
		"AOFCompletionReport": completionSchema(),
		"AOFStatusUpdate": payloadObj([]string{"taskId", "agentId"}, "At least one of status, progress, blockers or notes.", map[string]any{
			"taskId": taskIDSchema, "agentId": strSchema("The agent reporting; must be the task's assignee or running agent."),
			"status":   statusEnum,
			"progress": strSchema("At most 8 KiB."), "notes": strSchema("At most 8 KiB."), "blockers": strs("At most 100, each at most 8 KiB."),
		}),
		"AOFHandoffRequest": payloadObj([]string{"taskId", "parentTaskId", "fromAgent", "toAgent", "dueBy"}, "Links taskId (the envelope's) to its parent and writes inputs/handoff.json and inputs/handoff.md.", map[string]any{
			"taskId": taskIDSchema, "parentTaskId": taskIDSchema,
			"fromAgent":          strSchema("The parent task's assignee or running agent."),
			"toAgent":            strSchema("The agent the task is handed to."),
			"dueBy":              map[string]any{"type": "string", "format": "date-time"},
			"acceptanceCriteria": strs("What the task is reviewed against; an invalid list is logged as a warning and taken as empty."),
			"expectedOutputs":    strs(""), "contextRefs": strs(""), "constraints": strs(""),
		}),
		"AOFHandoffReply": payloadObj([]string{"taskId", "accepted"}, "handoff.accepted or handoff.rejected.", map[string]any{
			"taskId": taskIDSchema, "accepted": map[string]any{"type": "boolean"}, "reason": strSchema("Why; a rejection moves the task to blocked with it."),
		}),
		"AOFRun": payloadObj([]string{"taskId", "agentId", "startedAt", "status", "artifactPaths", "metadata"}, "run.json.", map[string]any{
			"taskId": taskIDSchema, "agentId": strSchema(""), "startedAt": dateTime,
			"status":        map[string]any{"type": "string", "enum": []string{"running", "expired"}},
			"artifactPaths": map[string]any{"type": "object", "description": "Each artifact's path by its name.", "additionalProperties": map[string]any{"type": "string"}},
			"metadata": map[string]any{"type": "object", "description": "leaseId while running; expiredAt and expiredReason once expired.",
				"properties": map[string]any{"leaseId": strSchema(""), "expiredAt": dateTime, "expiredReason": strSchema("")}},
		}),
		"AOFHeartbeat": payloadObj([]string{"taskId", "agentId", "lastHeartbeat", "beatCount", "expiresAt"}, "run_heartbeat.json.", map[string]any{
			"taskId": taskIDSchema, "agentId": strSchema(""), "lastHeartbeat": dateTime, "beatCount": map[string]any{"type": "integer", "minimum": 0}, "expiresAt": dateTime,
		}),
		"AOFRunResult": map[string]any{"description": "run_result.json: the completion report with its run.", "allOf": []any{ref("AOFCompletionReport"),
			payloadObj([]string{"taskId", "agentId", "completedAt"}, "", map[string]any{"taskId": taskIDSchema, "agentId": strSchema(""), "completedAt": dateTime})}},
		"AOFCreateRequest": obj([]string{"title"}, map[string]any{
			"taskId": taskIDSchema, "title": strSchema("The task's title."), "body": strSchema("The task's body (markdown)."), "assignee": strSchema("The agent it is for."),
			"status":         map[string]any{"type": "string", "enum": []string{"backlog", "ready"}, "default": "ready"},
			"reviewRequired": map[string]any{"type": "boolean", "default": true},
			"parentTaskId":   taskIDSchema,
		}),
		"AOFDispatchRequest":   obj([]string{"agentId"}, map[string]any{"agentId": strSchema("The agent that runs the task."), "ttlMs": map[string]any{"type": "integer", "minimum": 0, "maximum": 86400000, "default": 300000}}),
		"AOFHeartbeatRequest":  obj(nil, map[string]any{"agentId": strSchema("The agent that runs the task; absent, an executor's or reviewer's token's own name.")}),
		"AOFSessionEndRequest": obj(nil, map[string]any{"agentId": strSchema("Only this agent's runs. Absent: an executor's or reviewer's token's own; every agent's for an admin's or a coordinator's token; required with no tokens configured.")}),
		"AOFTask": obj([]string{"taskId", "title", "status", "metadata", "workLog", "createdAt", "updatedAt", "rev"}, map[string]any{
			"taskId": taskIDSchema, "title": strSchema(""), "body": strSchema("With the ## Work Log section."), "assignee": strSchema(""), "status": statusEnum,
			"createdBy":      strSchema("Who created the task: the token's name; the task.created event's actor."),
			"parentTaskId":   taskIDSchema,
			"metadata":       obj(nil, map[string]any{"delegationDepth": map[string]any{"type": "integer"}, "reviewRequired": map[string]any{"type": "boolean"}}),
			"workLog":        strs("- <timestamp> Progress: … | Notes: … | Blockers: …; the newest 100 lines, at most 64 KiB, each cut at 8 KiB."),
			"workLogDropped": map[string]any{"type": "integer", "description": "How many of the oldest work-log lines were dropped to keep it within its bounds; the events keep the messages."},
			"run":            ref("AOFRun"), "heartbeat": ref("AOFHeartbeat"),
			"result": ref("AOFRunResult"), "handoff": ref("AOFHandoffRequest"),
			"delegation": map[string]any{"type": "string", "enum": []string{"requested", "accepted", "rejected"}},
			"review":     ref("Decision"), "rev": map[string]any{"type": "integer", "description": "Counts the task's changes."},
			"agentReview": obj([]string{"ampTaskId", "round"}, map[string]any{
				"ampTaskId":   strSchema("With aof.review: agent, the AMP task id (T-YYYY-NNN…) of the reviewer agent's current or last review: the task_id of its review_request, ACK, heartbeats and review_verdict; empty when the admins took a review without asking the agent."),
				"round":       map[string]any{"type": "integer", "description": "Reviews asked of the reviewer agent so far."},
				"running":     map[string]any{"type": "boolean", "description": "True while the review waits for the reviewer agent."},
				"outcome":     map[string]any{"type": "string", "enum": []string{"approved", "approved_with_fix", "rejected", "no_verdict", "ended"}, "description": "How the last review ended: the verdict's decision, no_verdict (the admins review instead), or ended (the task left review first)."},
				"fallback":    strSchema("While the admins review instead, why: the agent reported needs_review or partial, no ACK or verdict in time, a delivery that failed, an escalation or a cancel, confidence below protocol.min_confidence, rejections past protocol.max_rejects, no completion report, or 999 rounds."),
				"stderr":      strSchema("A command-mode reviewer's stderr, when its delivery failed."),
				"rejections":  map[string]any{"type": "integer", "description": "The reviewer agent's rejections of the task's work so far."},
				"lastVerdict": strSchema("The msg_id of the reviewer agent's last verdict."),
			}),
			"ttlMs":     map[string]any{"type": "integer", "description": "The run's heartbeat life in milliseconds."},
			"leaseId":   strSchema("The lease of aof/<taskId> the running agent holds; released when the task leaves in_progress."),
			"createdAt": map[string]any{"type": "string", "format": "date-time"}, "updatedAt": map[string]any{"type": "string", "format": "date-time"},
		}),
		"AOFTaskView": map[string]any{"allOf": []any{ref("AOFTask"), obj([]string{"artifacts"}, map[string]any{
			"artifacts": map[string]any{"type": "object", "description": "The task's files by name (run.json, run_heartbeat.json, run_result.json, inputs/handoff.json, inputs/handoff.md), each its text.",
				"additionalProperties": map[string]any{"type": "string"}},
		})}},
		"AOFResult": obj([]string{"task", "changed"}, map[string]any{"task": ref("AOFTask"),
			"changed": map[string]any{"type": "boolean", "description": "False when the input changed nothing (a repeat, or a no-op in the task's state)."},
			"note":    strSchema("Why nothing, or something else, changed.")}),
		"AOFEvent": obj([]string{"seq", "id", "type", "actor", "timestamp", "payload"}, map[string]any{
			"seq": map[string]any{"type": "integer"}, "id": strSchema(""), "type": strSchema("protocol.message.received, protocol.message.rejected, protocol.message.unknown, task.created, task.completed, task.transitioned, delegation.requested, delegation.accepted, delegation.rejected, review.requested, review.decided, review.verdict, review.no_verdict"),
			"taskId": strSchema(""), "actor": strSchema(""), "timestamp": map[string]any{"type": "string", "format": "date-time"},
			"payload": eventPayloadSchema(),
		}),
		"AOFTasksResponse":  obj([]string{"tasks"}, map[string]any{"tasks": map[string]any{"type": "array", "items": ref("AOFTask")}, "next_cursor": strSchema("Pass as cursor for the next page; absent on the last.")}),
		"AOFEventsResponse": obj([]string{"events"}, map[string]any{"events": map[string]any{"type": "array", "items": ref("AOFEvent")}, "next_cursor": strSchema("Pass as cursor for the next page; absent on the last.")}),
		"AOFSessionEndResponse": obj([]string{"applied"}, map[string]any{"applied": map[string]any{"type": "array", "items": ref("AOFTask")},
			"more": map[string]any{"type": "boolean", "description": fmt.Sprintf("Tasks with a run result to apply were left for another call: one call applies at most %d.", MaxSessionEnd)}}),
	}
	envelopeSchemas(schemas)
	return httpapi.Spec{Codes: Codes, Schemas: schemas}
}

var dateTime = map[string]any{"type": "string", "format": "date-time"}

// payloadObj is an object schema with a description.
func payloadObj(required []string, desc string, props map[string]any) map[string]any {
	o := obj(required, props)
	if desc != "" {
		o["description"] = desc
	}
	return o
}

// payloadTypes are the AOF/1 message types with the schema of each
// one's payload.
var payloadTypes = []struct{ typ, schema string }{
	{wf.TypeCompletionReport, "AOFCompletionReport"},
	{wf.TypeStatusUpdate, "AOFStatusUpdate"},
	{wf.TypeHandoffRequest, "AOFHandoffRequest"},
	{wf.TypeHandoffAccepted, "AOFHandoffReply"},
	{wf.TypeHandoffRejected, "AOFHandoffReply"},
}

// envelopeSchema is the AOF/1 envelope: one of an envelope per type,
// its payload that type's, chosen by type.
func envelopeSchema() map[string]any {
	var one []any
	mapping := map[string]any{}
	for _, pt := range payloadTypes {
		name := "AOFEnvelope_" + pt.typ
		one = append(one, ref(name))
		mapping[pt.typ] = "#/components/schemas/" + name
	}
	return map[string]any{
		"description":   "An AOF/1 envelope; type selects its payload's schema.",
		"oneOf":         one,
		"discriminator": map[string]any{"propertyName": "type", "mapping": mapping},
	}
}

// envelopeSchemas are the envelopes of each type, added beside
// AOFEnvelope.
func envelopeSchemas(s map[string]any) {
	for _, pt := range payloadTypes {
		s["AOFEnvelope_"+pt.typ] = payloadObj([]string{"protocol", "version", "type", "taskId", "fromAgent", "toAgent", "sentAt", "payload"},
			"An AOF/1 "+pt.typ+" envelope.", map[string]any{
				"protocol":  map[string]any{"type": "string", "enum": []string{"aof"}},
				"version":   map[string]any{"type": "integer", "enum": []int{1}},
				"type":      map[string]any{"type": "string", "enum": []string{pt.typ}},
				"taskId":    taskIDSchema,
				"fromAgent": strSchema("The sending agent."),
				"toAgent":   strSchema("The receiving agent, typically dispatcher."),
				"sentAt":    dateTime,
				"payload":   ref(pt.schema),
			})
	}
}

func completionSchema() map[string]any {
	return payloadObj([]string{"outcome", "summaryRef", "tests", "notes"}, "blockers is required (not empty) for outcome blocked.", map[string]any{
		"outcome":      map[string]any{"type": "string", "enum": []string{"done", "blocked", "needs_review", "partial"}},
		"summaryRef":   strSchema("Not empty; a path under the task's directory or the data directory."),
		"handoffRef":   strSchema(""),
		"deliverables": strs("At most 100, each at most 8 KiB."),
		"tests":        testsSchema(),
		"blockers":     strs("At most 100, each at most 8 KiB."),
		"notes":        strSchema("At most 8 KiB."),
	})
}

func testsSchema() map[string]any {
	count := map[string]any{"type": "integer", "minimum": 0}
	return obj([]string{"total", "passed", "failed"}, map[string]any{"total": count, "passed": count, "failed": count})
}

// eventPayloadSchema is a logged event's payload: which fields it has
// depends on the event's type.
func eventPayloadSchema() map[string]any {
	return map[string]any{"type": "object",
		"description": "By type: protocol.message.rejected, delegation.rejected: reason (and type, parentTaskId); protocol.message.unknown: type; protocol.message.received: type, toAgent, sentAt, payload; " +
			"task.created: status, title, parentTaskId, reviewRequired; task.completed: outcome, summaryRef, tests, blockers, notes, warnings; task.transitioned: from, to, reason; " +
			"delegation.requested: parentTaskId, toAgent; delegation.accepted: parentTaskId; review.requested, review.decided: the decision record and decisionId (reviewer, ampTaskId, round for the reviewer agent); " +
			"review.verdict: ampTaskId, msgId, decision, confidence, issues; review.no_verdict: ampTaskId, reason.",
		"properties": map[string]any{
			"reason": strSchema(""), "type": strSchema("The message's type."), "toAgent": strSchema(""), "sentAt": dateTime,
			"payload": map[string]any{"description": "The message's payload as received.", "anyOf": []any{ref("AOFCompletionReport"), ref("AOFStatusUpdate"), ref("AOFHandoffRequest"), ref("AOFHandoffReply")}},
			"status":  statusEnum, "title": strSchema(""), "parentTaskId": taskIDSchema, "reviewRequired": map[string]any{"type": "boolean"},
			"outcome": map[string]any{"type": "string"}, "summaryRef": strSchema(""), "blockers": strs(""), "notes": strSchema(""), "warnings": strs(""),
			"from": statusEnum, "to": statusEnum, "decisionId": strSchema(""), "reviewer": strSchema(""), "ampTaskId": strSchema(""),
			"round": map[string]any{"type": "integer"}, "msgId": strSchema(""), "decision": strSchema(""), "confidence": map[string]any{"type": "number"},
			"issues": strSchema(""),
			"tests":  testsSchema(),
		}}
}
