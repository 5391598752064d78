package mcp

import (
	"fmt"
	"slices"
	"strings"
)

// tool is one MCP tool: an API route, the schema of its input built from
// the route's own OpenAPI operation, and how the input becomes the
// request.
type tool struct {
	name string
	// about leads the tool's description; the operation's summary and
	// description follow.
	about string
	// pattern is the API route called, "METHOD /path".
	pattern string
	// body picks the body schema when the operation takes several
	// (oneOf); empty takes its only one.
	body string
	// pathArgs name the input's properties that fill the path's
	// parameters: lease_id → {id}.
	pathArgs map[string]string
	// gate routes take an agent's gate key (gate.agents) rather than an
	// API token: the call presents AgentKeyHeader's key.
	gate bool
	// shape adjusts the input schema: properties the tool fills itself.
	shape func(schema map[string]any)
	// fill completes the input before it is sent, for the caller.
	fill func(args map[string]any, who identity)
}

// identity is who a tool call acts as: the API token's holder and, for
// the gate's routes, the agent of the gate key presented.
type identity struct {
	name, id  string
	gateAgent string
	now       string
}

// tools are the MCP server's tools, in the order tools/list gives them.
func tools() []tool {
	return []tool{
		{name: "inbox", pattern: "GET /v1/inbox",
			about: "Read this agent's AMP inbox (task dispatches, review requests), waiting up to `wait` for a message."},
		{name: "ack", pattern: "POST /v1/acks", body: "AckRequest",
			about: "Acknowledge a message from the inbox as this token's role."},
		{name: "send", pattern: "POST /v1/messages", body: "MessageRequest",
			about: "Reply to a task: a task_result (executor), review_verdict (reviewer) or escalation; the server builds the envelope."},
		{name: "task_transcript", pattern: "GET /v1/tasks/{id}/transcript", pathArgs: map[string]string{"task_id": "id"}, shape: noFollow,
			about: "Read what a task's agent runs did: their text, tool calls, tool results with exit codes, errors and cost so far, a page after a seq."},
		{name: "goal_start", pattern: "POST /v1/goals",
			about: "Start a goal: a graph of tasks, each started once the tasks it is blocked_by are done, in parallel where the graph allows (coordinators and admins)."},
		{name: "goal_show", pattern: "GET /v1/goals/{id}", pathArgs: map[string]string{"goal_id": "id"},
			about: "Read a goal: its status, each task's status, task id, cost and what it waits on."},
		{name: "heartbeat", pattern: "POST /v1/heartbeats",
			about: "Tell a task this agent is still working on it (restarts its heartbeat timer); a note is said in the mesh as task.progress."},
		{name: "lease_acquire", pattern: "POST /v1/leases",
			about: "Take a lease on a resource key (a file, a document) for ttl_seconds, as this token's agent."},
		{name: "lease_renew", pattern: "POST /v1/leases/{id}/heartbeat", pathArgs: map[string]string{"lease_id": "id"},
			about: "Renew a lease this agent holds."},
		{name: "lease_release", pattern: "DELETE /v1/leases/{id}", pathArgs: map[string]string{"lease_id": "id"},
			about: "Release a lease this agent holds."},
		{name: "leases", pattern: "GET /v1/leases",
			about: "List leases."},
		{name: "chat_send", pattern: "POST /v1/events", shape: chatSchema, fill: fillChat,
			about: "Send an agent.chat message in the mesh, from this token's agent, to another agent or to all; @name in content mentions an agent."},
		{name: "chat_inbox", pattern: "GET /v1/events/inbox",
			about: "Read this agent's mesh inbox: messages to it, mentioning it, and broadcasts with include_broadcast=true."},
		{name: "chat_thread", pattern: "GET /v1/events/{id}/thread", pathArgs: map[string]string{"event_id": "id"},
			about: "Read a mesh thread, root first."},
		{name: "chat_search", pattern: "GET /v1/events/search",
			about: "Search the mesh events this agent may read."},
		{name: "signal", pattern: "POST /v1/signals", gate: true,
			about: "Post a signal to the action gate (runshift AMP v1.0) as the agent of the gate key (" + AgentKeyHeader + " header)."},
		{name: "request_approval", pattern: "POST /v1/signals", gate: true, shape: approvalSchema, fill: fillApproval,
			about: "Ask the admins to approve an action before doing it: a gate signal with gate_required, as the agent of the gate key (" +
				AgentKeyHeader + " header). Answers pending with a gate_id; approval_status tells when it is approved or rejected."},
		{name: "approval_status", pattern: "GET /v1/signals/{run_id}", gate: true,
			about: "Where the gate of a signal's run_id stands (pending, approved, rejected)."},
		{name: "decide", pattern: "POST /v1/decide", gate: true,
			about: "Resolve an intent to a risk contract (AMCP decide) as the agent of the gate key (" + AgentKeyHeader + " header)."},
		{name: "contract", pattern: "GET /v1/contracts/{contractId}", gate: true,
			about: "Read a contract; once its gate is approved it carries the approvalToken that execute needs."},
		{name: "execute", pattern: "POST /v1/execute", gate: true,
			about: "Redeem a contract, once, for its execution blueprint (AMCP execute)."},
	}
}

// inputSchema builds t's input schema from the API's operation: the
// request body's schema, or the query parameters; the path parameters
// as the properties pathArgs names.
func (t tool) inputSchema(d *doc) (map[string]any, error) {
	o, err := d.op(t.pattern)
	if err != nil {
		return nil, err
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	name, err := o.bodyComponent(t.body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.pattern, err)
	}
	if name != "" {
		if schema, err = d.component(name); err != nil {
			return nil, err
		}
	}
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		schema["properties"] = props
	}
	required, _ := schema["required"].([]any)
	pathArg := map[string]string{}
	for arg, p := range t.pathArgs {
		pathArg[p] = arg
	}
	for _, p := range o.Parameters {
		arg := p.Name
		switch p.In {
		case "path":
			if a, ok := pathArg[p.Name]; ok {
				arg = a
			}
			required = append(required, arg)
		case "query":
			if p.Required {
				required = append(required, arg)
			}
		default:
			continue
		}
		if _, taken := props[arg]; taken {
			return nil, fmt.Errorf("%s: parameter %s is also a body property", t.pattern, arg)
		}
		ps, _ := deepCopy(p.Schema).(map[string]any)
		if ps == nil {
			ps = map[string]any{}
		}
		if p.Description != "" {
			ps["description"] = p.Description
		}
		props[arg] = ps
	}
	if len(required) > 0 {
		schema["required"] = required
	}
	if t.shape != nil {
		t.shape(schema)
	}
	return d.selfContained(schema)
}

// description is the tool's text: what it is for, then the route's own
// words.
func (t tool) description(d *doc) string {
	parts := []string{t.about, "Calls " + t.pattern + " as the caller."}
	if o, err := d.op(t.pattern); err == nil {
		parts = append(parts, strings.TrimSpace(o.Summary+". "+o.Description))
	}
	return strings.Join(parts, " ")
}

// chatSchema is the agent.chat payload a sender writes: from, from_id and
// timestamp are the tool's. The envelope's own schema (MeshEnvelope) is
// one of every event type's.
func chatSchema(schema map[string]any) {
	delete(schema, "oneOf")
	delete(schema, "discriminator")
	schema["type"] = "object"
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	schema["properties"] = map[string]any{
		"to":                str("An agent's name or id, or all."),
		"subject":           str("At most 500 bytes."),
		"content":           str("At most 32 KiB; @name mentions an agent and puts the message in its inbox too."),
		"parent_message_id": str("Makes it a reply: the parent event's id (its thread is the parent's)."),
		"task_id":           str("Links it to a task."),
		"channel":           str("The envelope's channel."),
		"id":                str("An id of the sender's for the event: a retry with the same id answers the stored event."),
	}
	schema["required"] = []any{"to", "subject", "content"}
	schema["additionalProperties"] = false
}

// fillChat wraps the input as the agent.chat envelope from the caller:
// from, from_id and timestamp are always the tool's, whatever the input
// says.
func fillChat(args map[string]any, who identity) {
	payload := map[string]any{}
	env := map[string]any{"type": "agent.chat", "severity": "info", "payload": payload}
	for k, v := range args {
		switch k {
		case "id", "channel":
			env[k] = v
		default:
			payload[k] = v
		}
		delete(args, k)
	}
	payload["from"], payload["from_id"], payload["timestamp"] = who.name, who.name, who.now
	if who.id != "" {
		payload["from_id"] = who.id
	}
	for k, v := range env {
		args[k] = v
	}
}

// approvalDefaults are the signal's fields request_approval fills when
// the input leaves them out.
var approvalDefaults = []string{"amp_version", "agent_id", "status", "model", "input_tokens", "output_tokens",
	"cost_usd", "started_at", "completed_at"}

// approvalSchema is the Signal without gate_required (always true) and
// with the fields request_approval fills optional.
func approvalSchema(schema map[string]any) {
	props := schema["properties"].(map[string]any)
	delete(props, "gate_required")
	var required []any
	for _, r := range schema["required"].([]any) {
		if s, _ := r.(string); s != "gate_required" && !slices.Contains(approvalDefaults, s) {
			required = append(required, r)
		}
	}
	if !slices.Contains(required, any("proposed_action")) {
		required = append(required, "proposed_action")
	}
	schema["required"] = required
}

// fillApproval makes the input a signal that asks for a gate.
func fillApproval(args map[string]any, who identity) {
	set := func(k string, v any) {
		if _, ok := args[k]; !ok {
			args[k] = v
		}
	}
	set("amp_version", "1.0")
	if who.gateAgent != "" {
		set("agent_id", who.gateAgent)
	}
	set("status", "completed")
	set("model", "unknown")
	set("input_tokens", 0)
	set("output_tokens", 0)
	set("cost_usd", 0)
	set("started_at", who.now)
	set("completed_at", who.now)
	args["gate_required"] = true
}

// noFollow drops follow from the transcript tool's input: a tool call
// answers once, it does not stream.
func noFollow(schema map[string]any) {
	if props, ok := schema["properties"].(map[string]any); ok {
		delete(props, "follow")
	}
}
