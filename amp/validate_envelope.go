package amp

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Patterns shared by the validator and the JSON Schemas. A task_id is
// "T-" + a four-digit year + "-" + a sequence number of at least three
// digits (zero-padded below 100, unbounded above 999). A msg_id's unix_ms
// is one or more digits and need not equal the timestamp: the spec's own
// example does not.
const (
	taskIDPattern    = `T-[0-9]{4}-[0-9]{3,}`
	unixMsPattern    = `[0-9]+`
	msgTypesPattern  = `task_dispatch|task_result|review_request|review_verdict|escalation`
	timestampPattern = `^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])` +
		`T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?` +
		`(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
)

var (
	taskIDRe    = regexp.MustCompile(`^` + taskIDPattern + `$`)
	timestampRe = regexp.MustCompile(timestampPattern)
	msgIDRe     = regexp.MustCompile(`^(` + msgTypesPattern + `|` + AckPrefix + `)-(` + taskIDPattern + `)-` + unixMsPattern + `$`)
)

var (
	senders    = []Role{RoleAdmin, RoleCoordinator, RoleExecutor, RoleReviewer, RoleSystem}
	recipients = []Role{RoleAdmin, RoleCoordinator, RoleExecutor, RoleReviewer}
	ackers     = []Role{RoleExecutor, RoleReviewer, RoleCoordinator, RoleAdmin}
)

// routes fixes from and to per type; an empty from means any sender.
var routes = map[Type]struct{ from, to Role }{
	TypeTaskDispatch:  {RoleCoordinator, RoleExecutor},
	TypeTaskResult:    {RoleExecutor, RoleCoordinator},
	TypeReviewRequest: {RoleCoordinator, RoleReviewer},
	TypeReviewVerdict: {RoleReviewer, RoleCoordinator},
	TypeEscalation:    {"", RoleAdmin},
}

// Route returns who sends and who receives a message type; from is empty
// for escalation, which any role (or the system) may send.
func Route(t Type) (from, to Role) {
	r := routes[t]
	return r.from, r.to
}

// ParseMsgID splits a msg_id "{type}-{task_id}-{unix_ms}" (or an ACK
// record's "ack-{task_id}-{unix_ms}"); ok is false when it is malformed.
func ParseMsgID(id string) (t Type, taskID string, ok bool) {
	sub := msgIDRe.FindStringSubmatch(id)
	if sub == nil {
		return "", "", false
	}
	return Type(sub[1]), sub[2], true
}

func timestamp(c *checker, path string, v any) {
	s, ok := v.(string)
	if !ok {
		c.add(path, "must be a string")
		return
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil || !timestampRe.MatchString(s) {
		c.add(path, "must be an RFC 3339 timestamp with an explicit offset (Z or ±hh:mm)")
	}
}

// msgIDOf accepts a well-formed msg_id of one of the given types.
func msgIDOf(types ...Type) rule {
	what := "a msg_id {type}-{task_id}-{unix_ms}"
	if len(types) == 1 {
		what = fmt.Sprintf("a msg_id %s-{task_id}-{unix_ms}", types[0])
	}
	return func(c *checker, path string, v any) {
		s, ok := v.(string)
		if !ok {
			c.add(path, "must be a string")
			return
		}
		if t, _, ok := ParseMsgID(s); !ok || !slices.Contains(types, t) {
			c.add(path, "must be "+what)
		}
	}
}

// sameTask reports a reference to another task's message; it only speaks
// when both the reference and task_id are otherwise well-formed.
func sameTask(c *checker, path string, m map[string]any, key, taskID string) {
	ref, _ := m[key].(string)
	if _, refTask, ok := ParseMsgID(ref); ok && taskIDRe.MatchString(taskID) && refTask != taskID {
		c.addf(joinKey(path, key), "refers to task %s, not task_id %s", refTask, taskID)
	}
}

var taskIDRule = matching(taskIDRe, "a task id T-YYYY-NNN")

var envelopeFields = []field{
	req("msg_id", msgIDOf(Types()...)),
	req("protocol_version", oneOf(ProtocolVersion)),
	req("type", oneOf(Types()...)),
	req("from", oneOf(senders...)),
	req("to", oneOf(recipients...)),
	req("task_id", taskIDRule),
	req("timestamp", timestamp),
	req("requires_ack", boolean),
	opt("ack_timeout_sec", integer(1, maxInt)),
	opt("context_ref", arrayOf(0, msgIDOf(Types()...))),
	req("payload", func(*checker, string, any) {}), // checked once type is known
}

// checkMessage validates a decoded message tree.
func (c *checker) checkMessage(v any) {
	c.object(RootPath, v, envelopeFields, checkEnvelope)
}

func checkEnvelope(c *checker, _ string, m map[string]any) {
	t, _ := m["type"].(string)
	typ := Type(t)
	taskID, _ := m["task_id"].(string)
	route, known := routes[typ]
	if !known {
		if p, ok := m["payload"]; ok {
			if _, isObj := p.(map[string]any); !isObj {
				c.add("payload", "must be an object")
			}
		}
		return
	}
	if from, _ := m["from"].(string); route.from != "" && slices.Contains(senders, Role(from)) && Role(from) != route.from {
		c.addf("from", "must be %q for %s", route.from, typ)
	}
	if to, _ := m["to"].(string); slices.Contains(recipients, Role(to)) && Role(to) != route.to {
		c.addf("to", "must be %q for %s", route.to, typ)
	}
	if id, _ := m["msg_id"].(string); id != "" {
		if idType, idTask, ok := ParseMsgID(id); ok && idType != AckPrefix {
			if idType != typ {
				c.addf("msg_id", "type segment %q does not match type %q", idType, typ)
			}
			if taskIDRe.MatchString(taskID) && idTask != taskID {
				c.addf("msg_id", "task segment %s does not match task_id %s", idTask, taskID)
			}
		}
	}
	ack, ackIsBool := m["requires_ack"].(bool)
	if ackIsBool && !ack && typ != TypeEscalation {
		c.addf("requires_ack", "must be true for %s", typ)
	}
	if _, ok := m["ack_timeout_sec"]; ok && ackIsBool && !ack {
		c.add("ack_timeout_sec", "allowed only when requires_ack is true")
	}
	if p, ok := m["payload"]; ok {
		payloadRules[typ](c, "payload", p, taskID)
	}
}

var ackFields = []field{
	req("msg_id", matching(regexp.MustCompile(`^`+AckPrefix+`-`+taskIDPattern+`-`+unixMsPattern+`$`), "an ACK id ack-{task_id}-{unix_ms}")),
	req("protocol_version", oneOf(ProtocolVersion)),
	req("ack_of", msgIDOf(Types()...)),
	req("task_id", taskIDRule),
	req("from", oneOf(ackers...)),
	req("timestamp", timestamp),
	opt("metadata", freeObject),
}

// checkAck validates a decoded ACK record tree.
func (c *checker) checkAck(v any) {
	c.object(RootPath, v, ackFields, checkAckIDs)
}

func checkAckIDs(c *checker, _ string, m map[string]any) {
	taskID, _ := m["task_id"].(string)
	if id, _ := m["msg_id"].(string); id != "" {
		if idType, idTask, ok := ParseMsgID(id); ok && idType == AckPrefix && taskIDRe.MatchString(taskID) && idTask != taskID {
			c.addf("msg_id", "task segment %s does not match task_id %s", idTask, taskID)
		}
	}
	sameTask(c, RootPath, m, "ack_of", taskID)
}
