// Package repomesh is the wire form of leases and the agent mesh (the
// RepoMesh agent communication protocol): the event envelope, its
// validation, and the HTTP handlers the API adds for leases, events,
// inboxes, threads, search, read receipts and agents' heartbeats.
//
// Agents authenticate with the API's tokens and speak only as
// themselves: a lease's agent_id, an event's payload.from and an inbox's
// recipient_id must be the caller's token name, unless the caller is an
// admin (or the API is open, with no tokens).
package repomesh

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/lease"
)

// Limits of an event.
const (
	// MaxName bounds names and ids: from, from_id, to, task ids (bytes).
	MaxName = 200
	// MaxSubject bounds payload.subject (bytes).
	MaxSubject = 500
	// MaxContent bounds payload.content and other free text (bytes).
	MaxContent = 32 << 10
	// MaxPayload bounds an event's whole payload (bytes).
	MaxPayload = 128 << 10
	// MaxMentions bounds the agents one message mentions.
	MaxMentions = 20
)

// Severities.
var severities = []string{"info", "warning", "error"}

// Event types with a meaning of their own.
const (
	TypeChat  = "agent.chat"
	TypeError = "agent.error"
)

// legacyTypes are accepted and stored as agent.chat.
var legacyTypes = []string{"agent.message", "chat.message"}

// Envelope is an event as agents post it (POST /v1/events).
type Envelope struct {
	// ID makes a post idempotent: a retry with the same id answers the
	// stored event. Empty gets a fresh id.
	ID       string          `json:"id,omitempty"`
	Type     string          `json:"type"`
	Severity string          `json:"severity"`
	AgentID  string          `json:"agent_id,omitempty"`
	Channel  string          `json:"channel,omitempty"`
	Payload  json.RawMessage `json:"payload"`
}

// Event is a stored event as the API answers it.
type Event struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Severity  string          `json:"severity"`
	AgentID   string          `json:"agent_id"`
	Channel   string          `json:"channel,omitempty"`
	ThreadID  string          `json:"thread_id"`
	CreatedAt time.Time       `json:"created_at"`
	Payload   json.RawMessage `json:"payload"`
	ReadBy    []ReadReceipt   `json:"read_by"`
}

// ReadReceipt is one agent having read an event.
type ReadReceipt struct {
	AgentID string    `json:"agent_id"`
	ReadAt  time.Time `json:"read_at"`
}

// field kinds of the registry.
const (
	kString = "string"
	kInt    = "integer"
	kNumber = "number"
	kArray  = "array"
	kObject = "object"
	kTime   = "timestamp"
)

type fieldSpec struct {
	name     string
	kind     string
	required bool
}

func req(name, kind string) fieldSpec { return fieldSpec{name, kind, true} }
func opt(name, kind string) fieldSpec { return fieldSpec{name, kind, false} }

// registry is the document's event types with their payload fields.
var registry = map[string][]fieldSpec{
	TypeChat: {req("from", kString), req("from_id", kString), req("to", kString), req("subject", kString),
		req("content", kString), opt("parent_message_id", kString), opt("task_id", kString), req("timestamp", kTime),
		opt("metadata", kObject), opt("mentions", kArray)},
	"handshake.request":   {req("from", kString), req("agent_type", kString), req("capabilities", kArray)},
	"handshake.accept":    {req("from", kString), req("message", kString)},
	"handshake.confirmed": {req("from", kString), req("message", kString)},
	"contact.establish":   {req("from", kString), req("message", kString)},
	"contact.confirmed":   {req("from", kString), req("message", kString)},

	"task.created":   {req("task_id", kString), req("goal", kString), req("priority", kInt), req("assignee", kString)},
	"task.claimed":   {req("task_id", kString), req("agent_id", kString), req("lease_ttl", kInt)},
	"task.progress":  {req("task_id", kString), req("agent_id", kString), req("progress_percent", kNumber), req("summary", kString)},
	"task.completed": {req("task_id", kString), req("agent_id", kString), req("result_summary", kString)},
	"task.blocked":   {req("task_id", kString), req("agent_id", kString), req("blocked_reason", kString)},

	"review.started": {req("task_id", kString), req("reviewer_id", kString), req("file_count", kInt)},
	"review.finding": {req("task_id", kString), req("file_path", kString), req("line_number", kInt),
		req("severity", kString), req("message", kString), opt("suggestion", kString), opt("reviewer_id", kString),
		opt("parent_message_id", kString), opt("code_snippet", kString)},
	"review.completed": {req("task_id", kString), req("findings_count", kInt), req("warnings", kInt), req("errors", kInt)},

	"test.started": {req("task_id", kString), req("suite_name", kString), req("test_count", kInt)},
	"test.result": {req("task_id", kString), req("passed", kInt), req("failed", kInt), req("skipped", kInt),
		req("duration_ms", kInt), req("failures", kArray), opt("suite_name", kString), opt("total", kInt), opt("artifacts", kArray)},
	"test.completed": {req("task_id", kString), req("total", kInt), req("passed", kInt), req("failed", kInt), req("artifacts", kArray)},

	"lock.acquired":      {req("lock_id", kString), req("agent_id", kString), req("resource_key", kString), req("ttl", kInt)},
	"lock.renewed":       {req("lock_id", kString), req("agent_id", kString), req("new_ttl", kInt)},
	"lock.released":      {req("lock_id", kString), req("agent_id", kString), req("reason", kString)},
	"lock.auto_released": {req("lock_id", kString), req("agent_id", kString), req("last_heartbeat", kTime)},
}

// Types lists the event types POST /v1/events takes, legacy ones included.
func Types() []string {
	var out []string
	for t := range registry {
		out = append(out, t)
	}
	out = append(out, legacyTypes...)
	slices.Sort(out)
	return out
}

// adminOnly are types only the system (or an admin) emits.
func adminOnly(typ string) bool { return strings.HasPrefix(typ, "lock.") }

// mentionRe finds @name in content.
var mentionRe = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.@-])@([A-Za-z0-9][A-Za-z0-9_.-]{0,99})`)

// Mentions lists the distinct agents content mentions, in order, at most
// MaxMentions.
func Mentions(content string) []string {
	var out []string
	for _, m := range mentionRe.FindAllStringSubmatch(content, -1) {
		name := strings.TrimRight(m[1], ".-")
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
		if len(out) == MaxMentions {
			break
		}
	}
	return out
}

// checked is an envelope that passed validation, ready to store.
type checked struct {
	typ, severity, channel string
	payload                map[string]any
	from, fromID, to       string
	subject, content       string
	parent, taskID         string
	mentions               []string
}

// check validates an envelope: legacy types become agent.chat (their
// missing fields filled: to "all", subject from content, timestamp now),
// the payload's fields are checked against the type's registry entry,
// and agent.chat gets its mentions. Problems come back per field.
func check(env Envelope, now time.Time) (checked, []amp.FieldError) {
	var errs []amp.FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, amp.FieldError{Path: field, Problem: fmt.Sprintf(format, args...)})
	}
	c := checked{typ: env.Type, severity: env.Severity, channel: env.Channel}
	legacy := slices.Contains(legacyTypes, env.Type)
	if legacy {
		c.typ = TypeChat
	}
	spec, known := registry[c.typ]
	switch {
	case env.Type == "":
		bad("type", "is required")
	case !known:
		bad("type", "is not an event type of the registry: %s", strings.Join(Types(), ", "))
	}
	if c.severity == "" && legacy {
		c.severity = "info"
	}
	if !slices.Contains(severities, c.severity) {
		bad("severity", "must be info, warning or error")
	}
	if len(env.Channel) > MaxName {
		bad("channel", "is longer than %d bytes", MaxName)
	}
	if len(env.Payload) > MaxPayload {
		bad("payload", "is larger than %d bytes", MaxPayload)
		return c, errs
	}
	if err := json.Unmarshal(env.Payload, &c.payload); err != nil || c.payload == nil {
		bad("payload", "must be a JSON object")
		return c, errs
	}
	p := c.payload
	if legacy {
		legacyFill(p, env.Type, now)
	}
	if !known {
		return c, errs
	}
	for _, f := range spec {
		v, ok := p[f.name]
		if !ok || v == nil {
			if f.required {
				bad("payload."+f.name, "is required (%s)", f.kind)
			}
			continue
		}
		if msg := kindProblem(f.kind, v); msg != "" {
			bad("payload."+f.name, "%s", msg)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, checkValues(c.typ, p)...)
	}
	for _, k := range nameFields {
		s, ok := p[k].(string)
		switch {
		case !ok || s == "":
		case len(s) > MaxName:
			bad("payload."+k, "is longer than %d bytes", MaxName)
		case lease.CheckAgent(s) != nil:
			bad("payload."+k, "%s", trimField(lease.CheckAgent(s)))
		}
	}
	if env.AgentID != "" {
		if err := lease.CheckAgent(env.AgentID); err != nil {
			bad("agent_id", "%s", trimField(err))
		}
	}
	if s, ok := p["subject"].(string); ok && len(s) > MaxSubject {
		bad("payload.subject", "is longer than %d bytes", MaxSubject)
	}
	for _, k := range textFields {
		if s, ok := p[k].(string); ok && len(s) > MaxContent {
			bad("payload."+k, "is longer than %d bytes", MaxContent)
		}
	}
	if c.typ == TypeChat {
		for _, k := range []string{"from", "from_id", "to", "subject", "content"} {
			if s, _ := p[k].(string); s == "" && !hasField(errs, "payload."+k) {
				bad("payload."+k, "must not be empty")
			}
		}
	}
	if len(errs) > 0 {
		return c, errs
	}
	str := func(k string) string { s, _ := p[k].(string); return s }
	c.from, c.fromID, c.to, c.subject = str("from"), str("from_id"), str("to"), str("subject")
	c.parent, c.taskID = str("parent_message_id"), str("task_id")
	if c.from == "" {
		c.from = firstOf(str("agent_id"), str("reviewer_id"))
	}
	if c.subject == "" {
		c.subject = firstOf(str("file_path"), str("suite_name"), str("goal"), str("resource_key"))
	}
	var text []string
	for _, k := range textFields {
		if s := str(k); s != "" {
			text = append(text, s)
		}
	}
	c.content = strings.Join(text, "\n")
	if c.typ == TypeChat {
		c.content = str("content")
		c.mentions = Mentions(c.content)
		if len(c.mentions) > 0 {
			p["mentions"] = c.mentions
		} else {
			delete(p, "mentions")
		}
	}
	return c, nil
}

// nameFields are the payload's names and ids: bounded, and without
// control characters, as a lease's agent.
var nameFields = []string{"from", "from_id", "to", "agent_id", "reviewer_id", "assignee", "task_id", "parent_message_id", "lock_id"}

// textFields are the payload fields searched as content.
var textFields = []string{"content", "message", "summary", "result_summary", "blocked_reason", "suggestion", "goal"}

func legacyFill(p map[string]any, typ string, now time.Time) {
	if _, ok := p["content"]; !ok {
		if m, ok := p["message"].(string); ok {
			p["content"] = m
		}
	}
	if _, ok := p["to"]; !ok {
		p["to"] = "all"
	}
	if _, ok := p["from_id"]; !ok {
		p["from_id"] = p["from"]
	}
	if _, ok := p["subject"]; !ok {
		if s, ok := p["content"].(string); ok {
			p["subject"] = truncate(firstLine(s), 80)
		}
	}
	if _, ok := p["timestamp"]; !ok {
		p["timestamp"] = now.UTC().Format(time.RFC3339Nano)
	}
	meta, _ := p["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["legacy_type"] = typ
	p["metadata"] = meta
}
