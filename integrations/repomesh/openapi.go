package repomesh

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// spec is what the mesh adds to the OpenAPI document: its schemas, made
// from the Go types the handlers read and write, and its error codes.
func spec() httpapi.Spec {
	schemas := map[string]any{}
	for name, v := range schemaTypes() {
		schemas[name] = schemaOf(reflect.TypeOf(v))
	}
	env := schemas["MeshEnvelope"].(map[string]any)
	env["properties"].(map[string]any)["severity"].(map[string]any)["enum"] = severities
	ev := schemas["MeshEvent"].(map[string]any)
	ev["properties"].(map[string]any)["severity"].(map[string]any)["enum"] = severities
	schemas["MeshEventList"].(map[string]any)["properties"].(map[string]any)["events"].(map[string]any)["items"] = ref("MeshEvent")
	typedEvents(schemas)
	return httpapi.Spec{Schemas: schemas, Codes: map[task.Code]int{
		CodeLockConflict:      http.StatusConflict,
		CodeInvalidPayload:    http.StatusBadRequest,
		CodePermissionDenied:  http.StatusForbidden,
		CodeTaskClaimConflict: http.StatusConflict,
	}}
}

// schemaTypes ties each schema name to its Go type.
func schemaTypes() map[string]any {
	return map[string]any{
		"LeaseAcquireRequest":    AcquireRequest{},
		"LeaseHeartbeatRequest":  HeartbeatRequest{},
		"Lease":                  Lease{},
		"LeaseList":              LeaseList{},
		"LockConflict":           ConflictBody{},
		"MeshEnvelope":           Envelope{},
		"MeshEvent":              Event{},
		"MeshEventList":          EventList{},
		"MeshReadRequest":        ReadRequest{},
		"AgentHeartbeatRequest":  AgentHeartbeatRequest{},
		"AgentHeartbeatResponse": AgentHeartbeatResponse{},
	}
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage{})
)

// schemaOf is the JSON Schema of a Go type as encoding/json writes it.
func schemaOf(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		// Replaced by each type's payload (typedEvents).
		return map[string]any{"type": "object"}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			props[name] = schemaOf(f.Type)
			if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
				required = append(required, name)
			}
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	return map[string]any{}
}

type operation struct {
	pattern string
	op      map[string]any
}

func ref(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func jsonBody(schema string) map[string]any {
	return map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref(schema)}}}
}

func resp(desc, schema string) map[string]any {
	return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": ref(schema)}}}
}

func errResp(desc string) map[string]any { return resp(desc, "Error") }

func param(in, name, desc string, required bool) map[string]any {
	return map[string]any{"in": in, "name": name, "description": desc, "required": required, "schema": map[string]any{"type": "string"}}
}

func pathID(desc string) map[string]any { return param("path", "id", desc, true) }

func query(name, desc string) map[string]any { return param("query", name, desc, false) }

var commonErrors = map[string]any{
	"401": errResp("No valid bearer token (code unauthenticated)."),
	"403": errResp("The caller may act only as itself (code PERMISSION_DENIED), or a cross-site Origin (code forbidden)."),
	"503": errResp("This worker has no SSOT or no Temporal client for leases, or Temporal did not answer (code unavailable)."),
}

func op(id, summary, desc string, params []any, body string, responses map[string]any) map[string]any {
	o := map[string]any{"operationId": id, "summary": summary, "tags": []string{"mesh"},
		"description": desc + "\n\nAny token role; an agent acts only as itself (its token's name) unless admin.",
		"responses":   responses}
	for code, r := range commonErrors {
		if _, ok := responses[code]; !ok {
			responses[code] = r
		}
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if body != "" {
		o["requestBody"] = jsonBody(body)
	}
	return o
}

func optionalBody(o map[string]any) map[string]any {
	o["requestBody"].(map[string]any)["required"] = false
	return o
}

// operations are the mesh's routes with their OpenAPI operations.
func operations() []operation {
	limit := query("limit", "Page size, 1 to 500 (leases: 1 to 1000); default 50 (leases: 100).")
	cursor := query("cursor", "next_cursor of the previous page.")
	return []operation{
		{"POST /v1/leases", op("postLeases", "Acquire a lease",
			"Takes resource_key for agent_id (empty: the caller) for ttl_seconds (1 to 86400); keys starting repo:, task: or aof/ are the system's (403). 201 with a new lease; 200 when the agent held it already (a renewal); 409 LOCK_CONFLICT naming the holder and retry_after_ms (until the holder's lease expires unless renewed). The lease is auto-released at last_heartbeat + ttl.",
			nil, "LeaseAcquireRequest", map[string]any{
				"201": resp("The lease taken.", "Lease"), "200": resp("The holder asked again: renewed.", "Lease"),
				"400": errResp("Invalid input (code invalid)."),
				"403": errResp("agent_id is not the caller (code PERMISSION_DENIED), or resource_key starts with a prefix the system reserves for its own leases, repo:, task: or aof/ (code PERMISSION_DENIED, fields naming resource_key; admins too); an agent.error tells the caller too."),
				"409": resp("Held by another agent (code LOCK_CONFLICT).", "LockConflict"),
			})},
		{"GET /v1/leases", op("getLeases", "List leases",
			"Leases from the SSOT, newest first, filtered by agent_id and state (active, expired, released).",
			[]any{query("agent_id", "The holder."), query("state", "active, expired or released."), limit, cursor}, "",
			map[string]any{"200": resp("A page of leases.", "LeaseList"), "400": errResp("Invalid filter (code invalid).")})},
		{"POST /v1/leases/{id}/heartbeat", op("postLeasesIdHeartbeat", "Renew a lease",
			"The holder's heartbeat: last_heartbeat becomes now and the lease expires ttl seconds later (ttl 0 or absent keeps the lease's).",
			[]any{pathID("The lease id.")}, "LeaseHeartbeatRequest", map[string]any{
				"200": resp("The lease renewed.", "Lease"), "400": errResp("Invalid ttl (code invalid)."),
				"403": errResp("Another agent holds the lease (code PERMISSION_DENIED; an agent.error tells the caller too)."),
				"404": errResp("The lease is not held: released or expired (code not_found)."),
			})},
		{"DELETE /v1/leases/{id}", op("deleteLeasesId", "Release a lease",
			"Releases the lease at once; by its holder or an admin.",
			[]any{pathID("The lease id.")}, "", map[string]any{
				"200": resp("The lease as released.", "Lease"),
				"403": errResp("Another agent holds the lease (code PERMISSION_DENIED; an agent.error tells the caller too)."),
				"404": errResp("The lease is not held: released or expired (code not_found)."),
			})},
		{"POST /v1/events", op("postEvents", "Post a mesh event",
			"The RepoMesh envelope. agent.chat needs payload from, from_id, to, subject, content and timestamp; agent.message and chat.message are stored as agent.chat; the registry's task, review, test and lock events have their payload fields checked (lock events: admins only): counts not negative, review.finding severity info, warning or error and line_number at least 1, task.progress progress_percent from 0 to 100, test.result failures objects each with a string test. @name in content is stored in payload.mentions and puts the message in that agent's inbox. Bounds: subject 500 bytes, content 32 KiB, payload 128 KiB, 20 mentions; names and ids (from, from_id, to, agent_id, reviewer_id, assignee, task_id, parent_message_id, lock_id) 200 bytes without control characters. payload from, from_id, agent_id and reviewer_id must be the caller's name unless admin (403 PERMISSION_DENIED). A refused event gets 400 INVALID_PAYLOAD naming the fields, and an agent.error event to the sender. An id is its sender's: a retry by the sender (same payload from and agent_id) answers the stored event, another sender's post with that id is 409 conflict, and ids starting ampflow- are the system's (400). A test.result with failures gets a test.retry event to its sender with retry_after_ms 1000, 2000 and 4000 after a test's first, second and third failure in the task's results; the third also files a bug task (\"Fix flaky test: <test>\", priority 2, medium risk): a task on the task's repository and branch, its plan waiting for an admin, or, for a task known only in the mesh, a task.created event assigned to the sender; it is named in the retry's bug_tasks, and a failure to file it reaches the sender as agent.error. A test.result with failures for a task comes only from a coordinator, an admin or one of the task's agents (it acknowledged the task's dispatch or review request, or claimed a task only the mesh knows): 403 PERMISSION_DENIED naming payload.task_id otherwise. One result files at most 3 bug tasks, a task's results 10; the others are named in the retry's bugs_not_filed. A task.claimed event claims its task: the lease task:<task_id> for payload.agent_id with TTL lease_ttl (0: 300 s), renewed by the claimer claiming again; another agent's claim while it is held is refused with 409 TASK_CLAIM_CONFLICT naming the holder, retry_after_ms 2000, and an agent.error to the sender.",
			nil, "MeshEnvelope", map[string]any{
				"201": resp("The event stored (a retry by its sender with the same id: the stored one).", "MeshEvent"),
				"400": errResp("Invalid envelope or payload (code INVALID_PAYLOAD); fields names each. An id starting ampflow- (the system's events) is refused so."),
				"403": errResp("payload from, from_id, agent_id or reviewer_id is not the caller, or a test.result with failures for a task the caller is no agent of (code PERMISSION_DENIED, fields naming payload.task_id); an agent.error tells the caller too."),
				"409": map[string]any{"description": "A task.claimed for a task another agent has claimed (code TASK_CLAIM_CONFLICT, a LockConflict), or an id another sender's event has (code conflict naming the field id, an Error; nothing of that event is answered).",
					"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"oneOf": []any{ref("LockConflict"), ref("Error")}}}}},
			})},
		{"GET /v1/events/inbox", op("getEventsInbox", "Read an inbox",
			"Events to recipient_id (empty: the caller) by name (the caller's inbox: by its token's name or id), or mentioning it, plus broadcasts (to: all) with include_broadcast=true; since (RFC 3339) keeps newer ones; direction asc or desc: asc (oldest first) by default when the caller reads its own inbox, desc when an admin reads another's. cursor is the seq of the last event read (the next of a page), so a consumer reading oldest first resumes after it; with wait (\"30s\" or whole seconds, at most the API's max wait) it long-polls until the page has an event or the wait is over (an empty page).",
			[]any{query("recipient_id", "The agent."), query("include_broadcast", "true or false."), query("since", "RFC 3339 time."),
				query("direction", "asc or desc; default asc for the caller's own inbox, desc for another's."), query("channel", "Only this channel."),
				query("wait", "Long-poll up to this long for a non-empty page."), limit, cursor}, "",
			map[string]any{"200": resp("A page of events.", "MeshEventList"), "400": errResp("Invalid parameter (code invalid).")})},
		{"GET /v1/events/search", op("getEventsSearch", "Search events",
			"Events newest first by sender (from), recipient (to), type, task_id, time (since inclusive, until exclusive) and q: keywords (letters and digits), all of which must be in the subject or content. An agent finds only the events it may read: those it sent, was sent or is mentioned in, and broadcasts (to: all); an admin finds all.",
			[]any{query("from", "Sender."), query("to", "Recipient."), query("type", "Event type."), query("task_id", "Task."),
				query("since", "RFC 3339 time."), query("until", "RFC 3339 time."), query("q", "Keywords."), limit, cursor}, "",
			map[string]any{"200": resp("A page of events.", "MeshEventList"), "400": errResp("Invalid parameter (code invalid).")})},
		{"GET /v1/events/{id}", op("getEventsId", "Read an event", "One event with its read receipts; 404 unless the caller may read it (its sender, recipient or a mentioned agent, a broadcast, or an admin).",
			[]any{pathID("The event id.")}, "", map[string]any{"200": resp("The event.", "MeshEvent"), "404": errResp("No such event (code not_found).")})},
		{"GET /v1/events/{id}/thread", op("getEventsIdThread", "Read a thread",
			"The thread the event is in (by parent_message_id), root first, at most 1000 events: those of them the caller may read; 404 unless it may read the event named.",
			[]any{pathID("Any event of the thread.")}, "", map[string]any{"200": resp("The thread.", "MeshEventList"), "404": errResp("No such event (code not_found).")})},
		{"POST /v1/events/{id}/read", optionalBody(op("postEventsIdRead", "Mark an event read",
			"Adds a read receipt for agent_id (empty: the caller); the first read time is kept. The body may be {}. 404 unless the caller may read the event.",
			[]any{pathID("The event id.")}, "MeshReadRequest", map[string]any{"200": resp("The event with read_by.", "MeshEvent"), "404": errResp("No such event (code not_found).")}))},
		{"POST /v1/agents/{id}/heartbeat", op("postAgentsIdHeartbeat", "Report an agent's status",
			"status active, inactive or recovered. inactive and recovered release every lease the agent holds (lock.auto_released events, and an agent.chat to the agent for each) and tell each of the agent's own tasks (those whose dispatch or review request it acknowledged with its token) still waiting for its role (role, default the caller's token role: executor for tasks dispatched or in_progress, reviewer for tasks in_review) to send its message again at once, at most 50 (an agent's role must be its token's; only an admin names another); recovered also posts the agent.chat \"recovered from crash, resuming work\" to all. One inactive or recovered report per agent a minute: another is 429.",
			[]any{pathID("The agent (its token's name).")}, "AgentHeartbeatRequest", map[string]any{
				"200": resp("What the heartbeat released.", "AgentHeartbeatResponse"), "400": errResp("Invalid status or role (code invalid)."),
				"403": errResp("Another agent, or a role not the token's (code PERMISSION_DENIED); a cross-site Origin (code forbidden)."),
				"429": errResp("The agent reported inactive or recovered less than a minute ago (code rate_limited; Retry-After says when it may again). Nothing was done."),
			})},
	}
}

// systemTypes are the event types only ampflow sends, with their
// payload fields: they are read, never posted.
var systemTypes = map[string][]fieldSpec{
	TypeError: {req("from", kString), req("from_id", kString), req("to", kString), req("original_action", kString),
		req("error_code", kString), req("message", kString), req("timestamp", kTime), opt("retry_after_ms", kInt),
		opt("task_id", kString), opt("id", kString), opt("test", kString), opt("holder", kString)},
	"test.retry": {req("from", kString), req("from_id", kString), req("to", kString), req("task_id", kString),
		opt("suite_name", kString), req("tests", kArray), req("attempt", kInt), req("retry_after_ms", kInt),
		req("not_before", kTime), req("parent_message_id", kString), opt("bug_tasks", kObject), opt("bugs_not_filed", kArray)},
}

// The payload fields whose shape the kind alone does not say.
var fieldSchemas = map[string]map[string]any{
	"failures": {"type": "array", "items": map[string]any{"type": "object", "required": []any{"test"}, "properties": map[string]any{
		"test": map[string]any{"type": "string", "maxLength": MaxName}, "error": map[string]any{"type": "string"}, "message": map[string]any{"type": "string"}}}},
	"capabilities":   {"type": "array", "items": map[string]any{"type": "string"}},
	"mentions":       {"type": "array", "items": map[string]any{"type": "string"}, "maxItems": MaxMentions, "description": "Set by ampflow from @name in content."},
	"tests":          {"type": "array", "items": map[string]any{"type": "string"}},
	"bugs_not_filed": {"type": "array", "items": map[string]any{"type": "string"}},
	"bug_tasks":      {"type": "object", "description": "The bug task filed for each test, by test.", "additionalProperties": map[string]any{"type": "string"}},
	"artifacts":      {"type": "array", "items": map[string]any{"type": "string"}, "description": "Paths or URLs of the run's artifacts."},
	"severity":       {"type": "string", "enum": severities},
}

// taskCreatedExtra are the fields of the task.created events ampflow
// sends for a bug task, beside the registry's.
var taskCreatedExtra = map[string]any{
	"description": map[string]any{"type": "string"}, "risk_level": map[string]any{"type": "string", "enum": []any{"low", "medium", "high"}},
	"from": map[string]any{"type": "string"}, "from_id": map[string]any{"type": "string"}, "to": map[string]any{"type": "string"},
	"parent_message_id": map[string]any{"type": "string"},
	"metadata": map[string]any{"type": "object", "description": "Of a bug task for a flaky test.", "properties": map[string]any{
		"original_task_id": map[string]any{"type": "string"}, "failure_count": map[string]any{"type": "integer"}, "test_suite": map[string]any{"type": "string"},
		"test": map[string]any{"type": "string"}}},
}

// payloadSchema is the JSON Schema of a type's payload: its registry
// fields, typed by kind; other fields are kept as sent.
func payloadSchema(typ string, spec []fieldSpec) map[string]any {
	props := map[string]any{}
	var required []any
	for _, f := range spec {
		var p map[string]any
		switch f.kind {
		case kString:
			p = map[string]any{"type": "string"}
		case kInt:
			p = map[string]any{"type": "integer"}
			if slices.Contains(nonNegative, f.name) {
				p["minimum"] = 0
			}
		case kNumber:
			p = map[string]any{"type": "number"}
		case kTime:
			p = map[string]any{"type": "string", "format": "date-time"}
		case kArray:
			p = map[string]any{"type": "array"}
		case kObject:
			p = map[string]any{"type": "object", "additionalProperties": map[string]any{"description": "Any JSON value: the protocol leaves metadata to the sender."}}
		}
		if fs, ok := fieldSchemas[f.name]; ok {
			p = maps.Clone(fs)
		}
		switch {
		case typ == "review.finding" && f.name == "line_number":
			p["minimum"] = 1
		case typ == "task.progress" && f.name == "progress_percent":
			p["minimum"], p["maximum"] = 0, 100
		}
		props[f.name] = p
		if f.required {
			required = append(required, f.name)
		}
	}
	if typ == "task.created" {
		maps.Copy(props, taskCreatedExtra)
	}
	o := map[string]any{"type": "object", "description": "The payload of " + typ + ".", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// typedEvents makes MeshEnvelope and MeshEvent one of a schema per event
// type, chosen by type, each with its type's payload.
func typedEvents(schemas map[string]any) {
	payloads := map[string]string{}
	for typ, spec := range registry {
		payloads[typ] = "MeshPayload_" + typ
		schemas[payloads[typ]] = payloadSchema(typ, spec)
	}
	for typ, spec := range systemTypes {
		payloads[typ] = "MeshPayload_" + typ
		schemas[payloads[typ]] = payloadSchema(typ, spec)
	}
	schemas["MeshPayload_legacy"] = map[string]any{"type": "object", "required": []any{"from"},
		"description": "agent.message and chat.message, stored as agent.chat: to defaults to all, from_id to from, subject to content's first line, timestamp to now.",
		"properties": map[string]any{"from": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}, "message": map[string]any{"type": "string"},
			"to": map[string]any{"type": "string"}, "from_id": map[string]any{"type": "string"}, "subject": map[string]any{"type": "string"},
			"timestamp": map[string]any{"type": "string", "format": "date-time"}}}
	for _, legacy := range legacyTypes {
		payloads[legacy] = "MeshPayload_legacy"
	}
	variants := func(base string, types []string) {
		one := []any{}
		mapping := map[string]any{}
		b := schemas[base].(map[string]any)
		for _, typ := range types {
			v := maps.Clone(b)
			props := maps.Clone(b["properties"].(map[string]any))
			props["type"] = map[string]any{"type": "string", "enum": []any{typ}}
			props["payload"] = ref(payloads[typ])
			v["properties"] = props
			v["description"] = "A " + typ + " event."
			name := base + "_" + typ
			schemas[name] = v
			one = append(one, ref(name))
			mapping[typ] = "#/components/schemas/" + name
		}
		schemas[base] = map[string]any{"oneOf": one, "discriminator": map[string]any{"propertyName": "type", "mapping": mapping},
			"description": "One schema per event type; type selects the payload's."}
	}
	variants("MeshEnvelope", Types())
	stored := slices.Sorted(maps.Keys(registry))
	stored = append(stored, slices.Sorted(maps.Keys(systemTypes))...)
	variants("MeshEvent", stored)
}
