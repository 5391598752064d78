package amp

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite schemas/*.json and testdata golden files")

// The embedded schemas are generated from the same patterns and enums the
// validator uses; TestSchemasUpToDate keeps them in step. Regenerate with
//
//	go test ./amp/ -run TestSchemasUpToDate -update
type obj = map[string]any

const schemaIDPrefix = "urn:ampflow:amp:1.0:"

const commonUnexpressed = "Rules ampflow's validator also enforces that this schema cannot express: " +
	"integers are written without fraction or exponent (60, not 60.0 or 6e1); " +
	"no object repeats a key; numbers inside free-form objects fit an IEEE 754 double; " +
	"documents nest at most 64 levels; timestamps are real calendar instants " +
	"(stated here as format date-time, which many validators only annotate)."

func strEnum[S ~string](vals ...S) obj {
	list := make([]any, len(vals))
	for i, v := range vals {
		list[i] = string(v)
	}
	return obj{"type": "string", "enum": list}
}

func constOf(v any) obj { return obj{"const": v} }

func arr(minItems int, items any) obj {
	o := obj{"type": "array", "items": items}
	if minItems > 0 {
		o["minItems"] = minItems
	}
	return o
}

func closed(required []string, props obj) obj {
	return obj{"type": "object", "additionalProperties": false, "required": required, "properties": props}
}

func intRange(min, max int) obj { return obj{"type": "integer", "minimum": min, "maximum": max} }

func describe(o obj, d string) obj { o["description"] = d; return o }

func msgIDSchema(types string) obj {
	return obj{"type": "string", "pattern": "^(" + types + ")-" + taskIDPattern + "-" + unixMsPattern + "$"}
}

func commonDefs() obj {
	return obj{
		"nonEmpty":  obj{"type": "string", "minLength": 1},
		"count":     intRange(0, maxInt),
		"task_id":   describe(obj{"type": "string", "pattern": "^" + taskIDPattern + "$"}, "T-YYYY-NNN: a four-digit year and a sequence number of three or more digits."),
		"timestamp": describe(obj{"type": "string", "format": "date-time", "pattern": timestampPattern}, "RFC 3339 with an explicit offset, Z or ±hh:mm."),
		"msg_id":    describe(msgIDSchema(msgTypesPattern), "A message id {type}-{task_id}-{unix_ms}."),
	}
}

func ref(name string) obj { return obj{"$ref": "#/$defs/" + name} }

func payloadSchema(t Type) (obj, string) {
	nonEmpty, count := ref("nonEmpty"), ref("count")
	minorOnly := obj{"properties": obj{"issues": obj{"items": obj{"properties": obj{"severity": constOf("minor")}}}}}
	switch t {
	case TypeTaskDispatch:
		return closed([]string{"description", "repo", "branch", "subtasks", "acceptance_criteria", "risk_level"}, obj{
			"description": nonEmpty,
			"repo":        describe(obj{"type": "string", "pattern": repoPattern}, "The repository: the absolute path of a local one, or a URL (file, https, http, ssh, git, user@host:path) of which each worker keeps a mirror."),
			"branch":      describe(obj{"type": "string", "minLength": 1, "not": strEnum(protectedBranches...)}, "Feature branch; never main or master."),
			"subtasks": arr(1, closed([]string{"subtask_id", "description", "estimated_lines"}, obj{
				"subtask_id": nonEmpty, "description": nonEmpty, "estimated_lines": count,
			})),
			"acceptance_criteria": arr(1, nonEmpty),
			"risk_level":          strEnum(RiskLow, RiskMedium, RiskHigh),
			"forbidden_actions":   arr(0, nonEmpty),
			"tech_constraints":    obj{"type": "object"},
		}), ""
	case TypeTaskResult:
		o := closed([]string{"subtask_id", "completion_status", "diff_summary", "self_assessment", "work_log"}, obj{
			"subtask_id":        nonEmpty,
			"completion_status": strEnum(StatusComplete, StatusPartial, StatusFailed),
			"diff_summary": closed([]string{"files_changed", "lines_added", "lines_removed"}, obj{
				"files_changed": arr(0, nonEmpty), "lines_added": count, "lines_removed": count,
			}),
			"self_assessment": closed([]string{"criteria_met", "notes"}, obj{
				"criteria_met": describe(arr(1, obj{"type": []any{"boolean", "null"}}), "One entry per acceptance criterion; null when it could not be verified."),
				"notes":        arr(0, obj{"type": "string"}),
			}),
			"work_log": arr(0, closed([]string{"timestamp", "action", "file", "detail"}, obj{
				"timestamp": ref("timestamp"), "action": nonEmpty, "file": obj{"type": "string"}, "detail": obj{"type": "string"},
			})),
			"commit_hash": obj{"type": "string", "pattern": commitHashPattern},
			"blockers":    arr(0, nonEmpty),
		})
		o["if"] = obj{"required": []any{"completion_status"}, "properties": obj{"completion_status": strEnum(StatusPartial, StatusFailed)}}
		o["then"] = obj{"required": []any{"blockers"}, "properties": obj{"blockers": obj{"minItems": 1}}}
		return o, ""
	case TypeReviewRequest:
		return closed([]string{"original_dispatch_ref", "task_result_ref", "review_scope", "diff_url", "reject_count"}, obj{
				"original_dispatch_ref": msgIDSchema(string(TypeTaskDispatch)),
				"task_result_ref":       msgIDSchema(string(TypeTaskResult)),
				"review_scope":          strEnum(ScopeFull, ScopeIncremental),
				"diff_url":              nonEmpty,
				"reject_count":          count,
				"coordinator_notes":     obj{"type": "string"},
				"ci_status": describe(obj{"type": "object", "additionalProperties": obj{"not": constOf("failed")}},
					"Free-form CI status; no entry may be \"failed\" (a failing CI is answered with a new task_dispatch, not a review)."),
			}),
			" original_dispatch_ref and task_result_ref belong to the envelope's task_id."
	case TypeReviewVerdict:
		o := closed([]string{"decision", "criteria_results", "confidence"}, obj{
			"decision": strEnum(DecisionApproved, DecisionApprovedWithFix, DecisionRejected),
			"criteria_results": arr(1, closed([]string{"criterion", "passed", "evidence"}, obj{
				"criterion": nonEmpty, "passed": obj{"type": []any{"boolean", "null"}}, "evidence": obj{"type": "string"},
			})),
			"issues": describe(arr(0, closed([]string{"severity", "file", "line", "description", "suggested_fix"}, obj{
				"severity": strEnum(SeverityCritical, SeverityMajor, SeverityMinor), "file": nonEmpty,
				"line":        describe(intRange(0, maxInt), "1-based line; 0 when the issue is not tied to one line."),
				"description": nonEmpty, "suggested_fix": obj{"type": "string"},
			})), "Required and non-empty when rejected; critical and major issues block, so approvals list only minor ones."),
			"direct_fixes": describe(arr(0, closed([]string{"file", "change_type", "diff_lines"}, obj{
				"file": nonEmpty, "change_type": strEnum(ChangeTypo, ChangeLint, ChangeWhitespace, ChangeImportOrder),
				"diff_lines": intRange(1, 4),
			})), "Required and non-empty exactly when decision is approved_with_fix."),
			"architecture_notes": obj{"type": "string"},
			"confidence":         obj{"type": "number", "minimum": 0, "maximum": 1},
		})
		when := func(d Decision, then obj) obj {
			return obj{"if": obj{"required": []any{"decision"}, "properties": obj{"decision": constOf(string(d))}}, "then": then}
		}
		o["allOf"] = []any{
			when(DecisionRejected, obj{
				"required":   []any{"issues"},
				"properties": obj{"issues": obj{"minItems": 1}},
				"not":        obj{"required": []any{"direct_fixes"}},
			}),
			when(DecisionApprovedWithFix, obj{
				"required":   []any{"direct_fixes"},
				"properties": obj{"direct_fixes": obj{"minItems": 1}, "issues": minorOnly["properties"].(obj)["issues"]},
			}),
			when(DecisionApproved, obj{
				"properties": minorOnly["properties"],
				"not":        obj{"required": []any{"direct_fixes"}},
			}),
		}
		return o, ""
	case TypeEscalation:
		o := closed([]string{"escalation_type", "severity", "triggered_by", "description", "affected_msgs", "system_state_snapshot", "auto_suspended"}, obj{
			"escalation_type":       strEnum(escalationTypes...),
			"severity":              strEnum(SeverityCritical, SeverityWarning, SeverityInfo),
			"triggered_by":          strEnum(RoleCoordinator, RoleExecutor, RoleReviewer, RoleSystem),
			"description":           nonEmpty,
			"affected_msgs":         describe(arr(0, nonEmpty), "Ids of the messages involved; free strings, since they may name messages that failed to parse."),
			"system_state_snapshot": obj{"type": "object"},
			"suggested_actions":     arr(0, nonEmpty),
			"auto_suspended":        describe(obj{"type": "boolean"}, "Must be true when severity is critical."),
		})
		o["if"] = obj{"required": []any{"severity"}, "properties": obj{"severity": constOf(string(SeverityCritical))}}
		o["then"] = obj{"properties": obj{"auto_suspended": constOf(true)}}
		return o, ""
	}
	panic("unknown type " + t)
}

func messageSchema(t Type) obj {
	from, to := Route(t)
	fromSchema := constOf(string(from))
	if from == "" {
		fromSchema = strEnum(senders...)
	}
	requiresAck := constOf(true)
	if t == TypeEscalation {
		requiresAck = obj{"type": "boolean"}
	}
	payload, extra := payloadSchema(t)
	defs := commonDefs()
	defs["payload"] = payload
	return obj{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  schemaIDPrefix + string(t),
		"title":                "AMP/1.0 " + string(t) + " message",
		"description":          "An AMP/1.0 " + string(t) + " message, envelope and payload. " + commonUnexpressed + " Also: the task_id segment of msg_id equals task_id." + extra,
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"msg_id", "protocol_version", "type", "from", "to", "task_id", "timestamp", "requires_ack", "payload"},
		"properties": obj{
			"msg_id":           describe(msgIDSchema(string(t)), "{type}-{task_id}-{unix_ms}; globally unique."),
			"protocol_version": constOf(ProtocolVersion),
			"type":             constOf(string(t)),
			"from":             fromSchema,
			"to":               constOf(string(to)),
			"task_id":          ref("task_id"),
			"timestamp":        ref("timestamp"),
			"requires_ack":     requiresAck,
			"ack_timeout_sec":  describe(intRange(1, maxInt), "Overrides the type's default ACK timeout; only with requires_ack true."),
			"context_ref":      describe(arr(0, ref("msg_id")), "Ids of earlier messages that give context."),
			"payload":          ref("payload"),
		},
		"dependentSchemas": obj{"ack_timeout_sec": obj{"properties": obj{"requires_ack": constOf(true)}}},
		"$defs":            defs,
	}
}

func ackSchema() obj {
	return obj{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  schemaIDPrefix + SchemaAck,
		"title":                "AMP/1.0 ACK record (ampflow)",
		"description":          "The record a receiver writes to SSOT to acknowledge a message; the spec names ACKs but defines no schema, so this one is ampflow's. " + commonUnexpressed + " Also: the task_id segments of msg_id and ack_of equal task_id.",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"msg_id", "protocol_version", "ack_of", "task_id", "from", "timestamp"},
		"properties": obj{
			"msg_id":           describe(msgIDSchema(AckPrefix), "ack-{task_id}-{unix_ms}."),
			"protocol_version": constOf(ProtocolVersion),
			"ack_of":           describe(ref("msg_id"), "msg_id of the acknowledged message."),
			"task_id":          ref("task_id"),
			"from":             strEnum(ackers...),
			"timestamp":        ref("timestamp"),
			"metadata":         describe(obj{"type": "object"}, "Free-form."),
		},
		"$defs": commonDefs(),
	}
}

func generatedSchema(t *testing.T, name string) []byte {
	t.Helper()
	s := ackSchema()
	if name != SchemaAck {
		s = messageSchema(Type(name))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSchemasUpToDate(t *testing.T) {
	for _, name := range SchemaNames() {
		want := generatedSchema(t, name)
		if *update {
			if err := os.WriteFile(filepath.Join("schemas", name+".json"), want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := Schema(name)
		if err != nil {
			t.Fatalf("Schema(%q): %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("schemas/%s.json is stale; regenerate with -update", name)
		}
	}
}

func TestSchemaUnknownName(t *testing.T) {
	for _, name := range []string{"", "Ack", "task_dispatch.json", "escalations"} {
		if _, err := Schema(name); !errors.Is(err, ErrUnknownSchema) {
			t.Errorf("Schema(%q) error = %v, want ErrUnknownSchema", name, err)
		}
	}
}

func TestSchemaNames(t *testing.T) {
	want := []string{"task_dispatch", "task_result", "review_request", "review_verdict", "escalation", "ack"}
	got := SchemaNames()
	if len(got) != len(want) {
		t.Fatalf("SchemaNames() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("SchemaNames() = %v, want %v", got, want)
		}
	}
}
