package amp

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSyntaxErrors(t *testing.T) {
	deep := `{"payload":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "}"
	cases := []struct {
		name   string
		in     string
		offset int64
		msg    string
	}{
		{"empty", "", 0, "unexpected end"},
		{"blank", "  ", 2, "unexpected end"},
		{"truncated", `{"msg_id":"x"`, 13, "unexpected end"},
		{"trailing comma", `{"a":1,}`, 7, "invalid character '}'"},
		{"missing colon", `{"a" 1}`, 5, "after object key"},
		{"leading zero", `{"a":01}`, 6, "invalid character '1'"},
		{"bad literal", `{"a":tru}`, 8, "in literal true"},
		{"comment", "{\n  // spec comment\n}", 4, "invalid character '/'"},
		{"trailing object", `{} {}`, 3, "trailing data"},
		{"trailing garbage", "{}\nx", 3, "invalid character 'x'"},
		{"invalid utf-8", "{\"a\":\"\xff\"}", 6, "invalid UTF-8"},
		{"too deep", deep, 75, "nesting deeper than 64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, parse := range []func([]byte) error{
				func(b []byte) error { _, err := Parse(b); return err },
				func(b []byte) error { _, err := ParseAck(b); return err },
				func(b []byte) error { _, err := ParseRecord(b); return err },
			} {
				err := parse([]byte(c.in))
				se, ok := errors.AsType[*SyntaxError](err)
				if !ok {
					t.Fatalf("error = %v (%T), want *SyntaxError", err, err)
				}
				if se.Offset != c.offset || !strings.Contains(se.Msg, c.msg) {
					t.Errorf("got offset %d %q, want offset %d containing %q", se.Offset, se.Msg, c.offset, c.msg)
				}
			}
		})
	}
}

func TestSyntaxErrorUnwrapsDecoderError(t *testing.T) {
	_, err := Parse([]byte(`{"a":}`))
	if _, ok := errors.AsType[*json.SyntaxError](err); !ok {
		t.Fatalf("error %v does not unwrap to *json.SyntaxError", err)
	}
}

func TestParseRejectsDuplicateKeys(t *testing.T) {
	b := good("dup", td).document(t)
	// Repeat keys at the top level and inside the payload; duplicates are
	// reported first, in document order (json.Marshal sorted the keys).
	s := strings.Replace(string(b), `"risk_level":"medium"`, `"risk_level":"high","risk_level":"medium"`, 1)
	s = strings.Replace(s, `{`, `{"type":"task_dispatch",`, 1)
	_, err := Parse([]byte(s))
	got := failingPaths(t, err)
	if want := []string{"payload.risk_level", "type"}; !slices.Equal(got, want) {
		t.Errorf("paths = %q, want %q", got, want)
	}
}

func TestRootMustBeObject(t *testing.T) {
	for _, in := range []string{`[]`, `"x"`, `1`, `null`, `true`} {
		_, err := ParseRecord([]byte(in))
		if got := failingPaths(t, err); !slices.Equal(got, []string{RootPath}) {
			t.Errorf("ParseRecord(%s) paths = %q", in, got)
		}
		_, err = ParseAck([]byte(in))
		if got := failingPaths(t, err); !slices.Equal(got, []string{RootPath}) {
			t.Errorf("ParseAck(%s) paths = %q", in, got)
		}
	}
}

func TestUnknownFieldSuggestions(t *testing.T) {
	cases := []struct{ key, want string }{
		{"acceptance_critera", `unknown field (did you mean "acceptance_criteria"?)`},
		{"Risk_Level", `unknown field (did you mean "risk_level"?)`},
		{"priority", "unknown field"},
	}
	for _, c := range cases {
		_, err := Parse(good("suggest", td, set("payload."+c.key, "x")).document(t))
		ve, isVE := errors.AsType[*ValidationError](err)
		if !isVE || len(ve.Fields) == 0 {
			t.Fatalf("%s: error = %v", c.key, err)
		}
		last := ve.Fields[len(ve.Fields)-1]
		if last.Path != "payload."+c.key || last.Problem != c.want {
			t.Errorf("%s: got %v, want %q", c.key, last, c.want)
		}
	}
}

func TestValidationErrorFormat(t *testing.T) {
	e := &ValidationError{Fields: []FieldError{{"a", "required"}, {"b[0].c", "must be a string"}}}
	if got, want := e.Error(), "a: required\nb[0].c: must be a string"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !e.Has("b[0].c") || e.Has("b") {
		t.Error("Has matches paths exactly")
	}
}

func TestParseRecord(t *testing.T) {
	ack := good("a", SchemaAck).document(t)
	r, err := ParseRecord(ack)
	if err != nil || r.Ack == nil || r.Message != nil {
		t.Fatalf("ACK record = %+v, %v", r, err)
	}
	if r.ID() != "ack-T-2026-044-1740576730000" || r.Ack.AckOf != "task_dispatch-T-2026-044-1740576727001" {
		t.Errorf("ACK = %+v", r.Ack)
	}
	r, err = ParseRecord(good("m", tr).document(t))
	if err != nil || r.Message == nil || r.Ack != nil || r.ID() != "task_result-T-2026-044-1740581280000" {
		t.Fatalf("message record = %+v, %v", r, err)
	}
	// An object with ack_of is judged as an ACK, so message fields are unknown there.
	_, err = ParseRecord(good("m", td, set("ack_of", "task_dispatch-T-2026-044-1")).document(t))
	if got := failingPaths(t, err); !slices.Contains(got, "type") || !slices.Contains(got, "payload") {
		t.Errorf("message with ack_of: paths = %q, want the envelope fields reported as unknown ACK fields", got)
	}
	if _, err := Parse(ack); err == nil {
		t.Error("Parse accepted an ACK record")
	}
	if _, err := ParseAck(good("m", td).document(t)); err == nil {
		t.Error("ParseAck accepted a message")
	}
}

var at = time.Date(2026, 2, 26, 14, 32, 7, 1_000_000, time.UTC)

func yes() *bool { b := true; return &b }

func builtMessages() map[string]Message {
	return map[string]Message{
		"dispatch": NewMessage(RoleCoordinator, RoleExecutor, "T-2026-044", at, &TaskDispatch{
			Description: "d", Repo: "/repo", Branch: "feature/x",
			Subtasks:           []Subtask{{SubtaskID: "T-2026-044-S1", Description: "d", EstimatedLines: 0}},
			AcceptanceCriteria: []string{"c"}, RiskLevel: RiskLow,
		}),
		"result with unset collections": NewMessage(RoleExecutor, RoleCoordinator, "T-2026-044", at, &TaskResult{
			SubtaskID: "T-2026-044-S1", CompletionStatus: StatusComplete,
			SelfAssessment: SelfAssessment{CriteriaMet: []*bool{yes(), nil}},
		}),
		"request": NewMessage(RoleCoordinator, RoleReviewer, "T-2026-044", at, &ReviewRequest{
			OriginalDispatchRef: MsgID(TypeTaskDispatch, "T-2026-044", at),
			TaskResultRef:       MsgID(TypeTaskResult, "T-2026-044", at),
			ReviewScope:         ScopeIncremental, DiffURL: "file:///tmp/x.diff",
		}),
		"rejected verdict": NewMessage(RoleReviewer, RoleCoordinator, "T-2026-044", at, &ReviewVerdict{
			Decision:        DecisionRejected,
			CriteriaResults: []CriterionResult{{Criterion: "c"}},
			Issues:          []Issue{{Severity: SeverityMajor, File: "a.go", Description: "d"}},
		}),
		"escalation with nil snapshot": NewMessage(RoleSystem, RoleAdmin, "T-2026-044", at, &Escalation{
			EscalationType: EscAckTimeout, Severity: SeverityWarning, TriggeredBy: RoleExecutor, Description: "d",
		}),
	}
}

func TestValidateBuiltMessages(t *testing.T) {
	for name, m := range builtMessages() {
		t.Run(name, func(t *testing.T) {
			if err := m.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse(Marshal(m)): %v", err)
			}
			if b2, _ := json.Marshal(back); string(b2) != string(b) {
				t.Errorf("round trip changed the message:\n%s\n%s", b, b2)
			}
		})
	}
}

func TestValidateReportsBuildMistakes(t *testing.T) {
	built := builtMessages()
	rejected := built["rejected verdict"]
	rejected.Verdict().Issues = nil
	wrongPayload := built["dispatch"]
	wrongPayload.Payload = &TaskResult{}
	noPayload := built["dispatch"]
	noPayload.Payload = nil
	typedNil := built["dispatch"]
	typedNil.Payload = (*TaskDispatch)(nil)
	emptyDispatch := NewMessage(RoleCoordinator, RoleExecutor, "T-2026-044", at, &TaskDispatch{Description: "d", Repo: "/r", Branch: "b", RiskLevel: RiskLow})
	cases := []struct {
		name string
		m    Message
		want []string
	}{
		{"rejected without issues", rejected, []string{"payload.issues"}},
		{"payload of another type", wrongPayload, []string{"payload"}},
		{"nil payload", noPayload, []string{"payload"}},
		{"typed nil payload", typedNil, []string{"payload"}},
		{"unset required lists", emptyDispatch, []string{"payload.subtasks", "payload.acceptance_criteria"}},
		{"bad task id", NewMessage(RoleCoordinator, RoleExecutor, "T-44", at, built["dispatch"].Payload), []string{"msg_id", "task_id"}},
		{"wrong route", NewMessage(RoleExecutor, RoleReviewer, "T-2026-044", at, built["dispatch"].Payload), []string{"from", "to"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := failingPaths(t, c.m.Validate()); !slices.Equal(got, c.want) {
				t.Errorf("paths = %q, want %q", got, c.want)
			}
		})
	}
}

func TestAckBuiltAndValidated(t *testing.T) {
	msg := builtMessages()["dispatch"]
	a := NewAck(RoleExecutor, msg, at.Add(time.Second))
	if err := a.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	b, _ := json.Marshal(a)
	r, err := ParseRecord(b)
	if err != nil || r.Ack == nil || !reflect.DeepEqual(*r.Ack, a) {
		t.Fatalf("ParseRecord(Marshal(ack)) = %+v, %v", r, err)
	}
	a.From = RoleSystem
	if got := failingPaths(t, a.Validate()); !slices.Equal(got, []string{"from"}) {
		t.Errorf("ACK from system: paths = %q", got)
	}
}

func TestParseCanonicalizesEmptyOptionals(t *testing.T) {
	m, err := Parse(good("c", td, set("context_ref", []any{}), set("payload.forbidden_actions", []any{}), set("payload.tech_constraints", obj2{})).document(t))
	if err != nil {
		t.Fatal(err)
	}
	if m.ContextRef != nil || m.Dispatch().ForbiddenActions != nil || m.Dispatch().TechConstraints != nil {
		t.Errorf("empty optionals kept: %+v %+v", m.ContextRef, m.Dispatch())
	}
}

func TestParseMsgID(t *testing.T) {
	cases := []struct {
		id     string
		typ    Type
		taskID string
		ok     bool
	}{
		{"task_dispatch-T-2026-044-1740576727001", TypeTaskDispatch, "T-2026-044", true},
		{"ack-T-2026-1044-1", AckPrefix, "T-2026-1044", true},
		{"review_verdict-T-2026-044-", "", "", false},
		{"review-T-2026-044-1", "", "", false},
		{"escalation-T-2026-044-1-2", "", "", false},
	}
	for _, c := range cases {
		typ, taskID, ok := ParseMsgID(c.id)
		if typ != c.typ || taskID != c.taskID || ok != c.ok {
			t.Errorf("ParseMsgID(%q) = %q, %q, %v", c.id, typ, taskID, ok)
		}
	}
}

func TestRoute(t *testing.T) {
	for _, typ := range Types() {
		from, to := Route(typ)
		if to == "" || (from == "") != (typ == TypeEscalation) {
			t.Errorf("Route(%s) = %s, %s", typ, from, to)
		}
	}
}
