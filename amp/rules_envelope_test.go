package amp

import "testing"

const (
	td = "task_dispatch"
	tr = "task_result"
	rq = "review_request"
	rv = "review_verdict"
	es = "escalation"
)

var envelopeCases = []ruleCase{
	good("spec dispatch", td),
	good("spec result", tr),
	good("spec request", rq),
	good("spec verdict", rv),
	good("spec escalation", es),

	bad("protocol_version other", td, paths("protocol_version"), set("protocol_version", "AMP/1.1")),
	bad("protocol_version missing", td, paths("protocol_version"), del("protocol_version")),
	bad("protocol_version number", td, paths("protocol_version"), set("protocol_version", num("1"))),

	bad("type unknown", td, paths("type"), set("type", "task_dispatched")),
	bad("type missing", td, paths("type"), del("type")),
	bad("type unknown payload not object", td, paths("type", "payload"), set("type", "x"), set("payload", "x")),

	bad("from unknown", td, paths("from"), set("from", "boss")),
	bad("from missing", td, paths("from"), del("from")),
	bad("from system on dispatch", td, paths("from"), set("from", "system")),
	bad("from executor on dispatch", td, paths("from"), set("from", "executor")),
	bad("from coordinator on result", tr, paths("from"), set("from", "coordinator")),
	bad("from executor on request", rq, paths("from"), set("from", "executor")),
	bad("from executor on verdict", rv, paths("from"), set("from", "executor")),
	good("escalation from system", es, set("from", "system"), set("payload.triggered_by", "system")),
	good("escalation from executor", es, set("from", "executor")),
	good("escalation from reviewer", es, set("from", "reviewer")),
	good("escalation from admin", es, set("from", "admin")),

	bad("to system", td, paths("to"), set("to", "system")),
	bad("to missing", td, paths("to"), del("to")),
	bad("to reviewer on dispatch", td, paths("to"), set("to", "reviewer")),
	bad("to executor on result", tr, paths("to"), set("to", "executor")),
	bad("to executor on request", rq, paths("to"), set("to", "executor")),
	bad("to admin on verdict", rv, paths("to"), set("to", "admin")),
	bad("to coordinator on escalation", es, paths("to"), set("to", "coordinator")),

	good("msg_id short unix_ms", td, set("msg_id", "task_dispatch-T-2026-044-0")),
	bad("msg_id missing", td, paths("msg_id"), del("msg_id")),
	bad("msg_id without unix_ms", td, paths("msg_id"), set("msg_id", "task_dispatch-T-2026-044")),
	bad("msg_id placeholder", td, paths("msg_id"), set("msg_id", "task_dispatch-T-2026-044-...")),
	bad("msg_id unknown type", td, paths("msg_id"), set("msg_id", "dispatch-T-2026-044-1740576727001")),
	bad("msg_id ack prefix", td, paths("msg_id"), set("msg_id", "ack-T-2026-044-1740576727001")),
	bad("msg_id other type", td, paths("msg_id"), set("msg_id", "task_result-T-2026-044-1740576727001")),
	goOnly(bad("msg_id other task", td, paths("msg_id"), set("msg_id", "task_dispatch-T-2026-045-1740576727001"))),
	bad("msg_id number", td, paths("msg_id"), set("msg_id", num("1"))),

	good("task_id four-digit number", td, set("task_id", "T-2026-1044"), set("msg_id", "task_dispatch-T-2026-1044-1")),
	good("task_id zero sequence", td, set("task_id", "T-2026-000"), set("msg_id", "task_dispatch-T-2026-000-1")),
	bad("task_id two-digit year", td, paths("task_id"), set("task_id", "T-26-044")),
	bad("task_id two-digit number", td, paths("task_id"), set("task_id", "T-2026-44")),
	bad("task_id lower case", td, paths("task_id"), set("task_id", "t-2026-044")),
	bad("task_id suffix", td, paths("task_id"), set("task_id", "T-2026-044-S1")),
	bad("task_id missing", td, paths("task_id"), del("task_id")),

	good("timestamp Z", td, set("timestamp", "2026-02-26T14:32:07Z")),
	good("timestamp fraction and offset", td, set("timestamp", "2026-02-26T14:32:07.123456789+05:30")),
	good("timestamp negative offset", td, set("timestamp", "2026-02-26T14:32:07-08:00")),
	bad("timestamp no offset", td, paths("timestamp"), set("timestamp", "2026-02-26T14:32:07")),
	bad("timestamp space separator", td, paths("timestamp"), set("timestamp", "2026-02-26 14:32:07Z")),
	bad("timestamp lower case", td, paths("timestamp"), set("timestamp", "2026-02-26t14:32:07z")),
	bad("timestamp compact offset", td, paths("timestamp"), set("timestamp", "2026-02-26T14:32:07+0000")),
	bad("timestamp date only", td, paths("timestamp"), set("timestamp", "2026-02-26")),
	bad("timestamp February 30", td, paths("timestamp"), set("timestamp", "2026-02-30T14:32:07Z")),
	bad("timestamp hour 24", td, paths("timestamp"), set("timestamp", "2026-02-26T24:00:00Z")),
	bad("timestamp ten fraction digits", td, paths("timestamp"), set("timestamp", "2026-02-26T14:32:07.1234567890Z")),
	bad("timestamp unix number", td, paths("timestamp"), set("timestamp", num("1740576727"))),
	bad("timestamp missing", td, paths("timestamp"), del("timestamp")),

	bad("requires_ack missing", td, paths("requires_ack"), del("requires_ack")),
	bad("requires_ack string", td, paths("requires_ack"), set("requires_ack", "true")),
	bad("requires_ack null", td, paths("requires_ack"), set("requires_ack", nil)),
	bad("requires_ack false on dispatch", td, paths("requires_ack"), set("requires_ack", false), del("ack_timeout_sec")),
	bad("requires_ack false on result", tr, paths("requires_ack"), set("requires_ack", false), del("ack_timeout_sec")),
	bad("requires_ack false on request", rq, paths("requires_ack"), set("requires_ack", false), del("ack_timeout_sec")),
	bad("requires_ack false on verdict", rv, paths("requires_ack"), set("requires_ack", false), del("ack_timeout_sec")),
	good("escalation requires_ack true", es, set("requires_ack", true)),

	good("ack_timeout_sec absent", td, del("ack_timeout_sec")),
	good("ack_timeout_sec one", td, set("ack_timeout_sec", num("1"))),
	good("escalation ack_timeout_sec with requires_ack", es, set("requires_ack", true), set("ack_timeout_sec", num("900"))),
	bad("ack_timeout_sec zero", td, paths("ack_timeout_sec"), set("ack_timeout_sec", num("0"))),
	bad("ack_timeout_sec negative", td, paths("ack_timeout_sec"), set("ack_timeout_sec", num("-5"))),
	bad("ack_timeout_sec string", td, paths("ack_timeout_sec"), set("ack_timeout_sec", "300")),
	bad("ack_timeout_sec fraction", td, paths("ack_timeout_sec"), set("ack_timeout_sec", num("300.5"))),
	goOnly(bad("ack_timeout_sec integral float", td, paths("ack_timeout_sec"), set("ack_timeout_sec", num("300.0")))),
	goOnly(bad("ack_timeout_sec exponent", td, paths("ack_timeout_sec"), set("ack_timeout_sec", num("3e2")))),
	bad("ack_timeout_sec above int32", td, paths("ack_timeout_sec"), set("ack_timeout_sec", num("2147483648"))),
	bad("ack_timeout_sec above int64", td, paths("ack_timeout_sec"), set("ack_timeout_sec", num("99999999999999999999"))),
	bad("ack_timeout_sec without requires_ack", es, paths("ack_timeout_sec"), set("ack_timeout_sec", num("60"))),

	good("context_ref absent", td, del("context_ref")),
	good("context_ref empty", td, set("context_ref", []any{})),
	bad("context_ref string", td, paths("context_ref"), set("context_ref", "task_dispatch-T-2026-043-1")),
	bad("context_ref number item", td, paths("context_ref[0]"), set("context_ref", []any{num("1")})),
	bad("context_ref malformed id", td, paths("context_ref[1]"), set("context_ref", []any{"task_dispatch-T-2026-043-1", "task_dispatch-T-2026-043-..."})),
	bad("context_ref ack id", td, paths("context_ref[0]"), set("context_ref", []any{"ack-T-2026-044-1"})),

	bad("payload missing", td, paths("payload"), del("payload")),
	bad("payload array", td, paths("payload"), set("payload", []any{})),
	bad("payload null", td, paths("payload"), set("payload", nil)),

	bad("unknown envelope field", td, paths("msgid"), set("msgid", "x")),
	bad("unknown fields sorted", td, paths("a", "b", "z"), set("z", 1), set("b", 1), set("a", 1)),
	bad("unknown field odd name", td, paths(`["x-y"]`), set("x-y", 1)),
	bad("envelope field case matters", td, paths("Msg_ID"), set("Msg_ID", "task_dispatch-T-2026-044-1")),
	bad("many errors in order", td,
		paths("msg_id", "protocol_version", "from", "timestamp", "payload.branch", "payload.risk_level", "extra"),
		set("extra", true), set("payload.risk_level", "none"), set("payload.branch", "main"),
		set("timestamp", "yesterday"), set("from", "reviewer"), set("protocol_version", "AMP/2"),
		set("msg_id", "task_result-T-2026-044-1")),
}

var ackCases = []ruleCase{
	good("ack valid", SchemaAck),
	good("ack without metadata", SchemaAck, del("metadata")),
	good("ack nested metadata", SchemaAck, set("metadata", map[string]any{"a": map[string]any{"b": []any{num("1"), nil}}})),
	good("ack from coordinator", SchemaAck, set("from", "coordinator")),
	good("ack from admin", SchemaAck, set("from", "admin")),
	good("ack of escalation", SchemaAck, set("ack_of", "escalation-T-2026-044-1")),
	bad("ack msg_id message type", SchemaAck, paths("msg_id"), set("msg_id", "task_dispatch-T-2026-044-1")),
	bad("ack msg_id malformed", SchemaAck, paths("msg_id"), set("msg_id", "ack-T-2026-044")),
	goOnly(bad("ack msg_id other task", SchemaAck, paths("msg_id"), set("msg_id", "ack-T-2026-045-1"))),
	bad("ack_of malformed", SchemaAck, paths("ack_of"), set("ack_of", "task_dispatch-T-2026-044-...")),
	bad("ack_of an ack", SchemaAck, paths("ack_of"), set("ack_of", "ack-T-2026-044-1")),
	goOnly(bad("ack_of other task", SchemaAck, paths("ack_of"), set("ack_of", "task_dispatch-T-2026-045-1"))),
	bad("ack_of missing", SchemaAck, paths("ack_of"), del("ack_of")),
	bad("ack from system", SchemaAck, paths("from"), set("from", "system")),
	bad("ack from missing", SchemaAck, paths("from"), del("from")),
	bad("ack timestamp without offset", SchemaAck, paths("timestamp"), set("timestamp", "2026-02-26T14:32:10")),
	bad("ack protocol_version", SchemaAck, paths("protocol_version"), set("protocol_version", "AMP/0.9")),
	bad("ack task_id", SchemaAck, paths("task_id"), set("task_id", "T-2026")),
	bad("ack metadata string", SchemaAck, paths("metadata"), set("metadata", "x")),
	goOnly(bad("ack metadata number out of range", SchemaAck, paths("metadata.n"), set("metadata", map[string]any{"n": num("1e400")}))),
	bad("ack unknown field", SchemaAck, paths("type"), set("type", "ack")),
}

func TestEnvelopeRules(t *testing.T) { runRuleCases(t, envelopeCases) }

func TestAckRules(t *testing.T) { runRuleCases(t, ackCases) }
