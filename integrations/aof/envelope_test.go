package aof

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	wf "github.com/ampflow/ampflow/workflows/aof"
)

func example(t *testing.T, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "example"+string(rune('0'+n))+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// content wraps text as a received message.
func content(text string) string {
	b, _ := json.Marshal(map[string]string{"content": text})
	return string(b)
}

// TestDetectExamples reads every example of the document in each of the
// three forms the router detects.
func TestDetectExamples(t *testing.T) {
	want := map[int]struct {
		typ, task string
		check     func(t *testing.T, m wf.Message)
	}{
		1: {wf.TypeCompletionReport, "TASK-2026-02-09-057", func(t *testing.T, m wf.Message) {
			c := m.Completion
			if c.Outcome != wf.OutcomeDone || c.Tests != (wf.TestReport{Total: 120, Passed: 120}) || len(c.Deliverables) != 2 || len(c.Blockers) != 0 {
				t.Errorf("completion %+v", c)
			}
		}},
		2: {wf.TypeCompletionReport, "TASK-2026-02-09-058", func(t *testing.T, m wf.Message) {
			if m.Completion.Outcome != wf.OutcomeBlocked || len(m.Completion.Blockers) != 2 {
				t.Errorf("completion %+v", m.Completion)
			}
		}},
		3: {wf.TypeStatusUpdate, "TASK-2026-02-09-059", func(t *testing.T, m wf.Message) {
			s := m.Status
			if s.Status != "" || s.Progress != "Executed 50/100 test cases" || s.Notes != "No issues found so far" || s.AgentID != "swe-qa" {
				t.Errorf("status %+v", s)
			}
		}},
		4: {wf.TypeStatusUpdate, "TASK-2026-02-09-060", func(t *testing.T, m wf.Message) {
			if m.Status.Status != wf.StatusBlocked || wf.TransitionReason(*m.Status) != "Test environment unreachable" {
				t.Errorf("status %+v", m.Status)
			}
		}},
		5: {wf.TypeHandoffRequest, "TASK-2026-02-09-061", func(t *testing.T, m wf.Message) {
			h := m.Handoff
			if h.ParentTaskID != "TASK-2026-02-09-057" || len(h.AcceptanceCriteria) != 3 || len(h.ContextRefs) != 4 || h.DueBy != "2026-02-10T12:00:00.000Z" {
				t.Errorf("handoff %+v", h)
			}
		}},
		6: {wf.TypeHandoffAccepted, "TASK-2026-02-09-061", func(t *testing.T, m wf.Message) {
			if !m.Reply.Accepted {
				t.Errorf("reply %+v", m.Reply)
			}
		}},
		7: {wf.TypeHandoffRejected, "TASK-2026-02-09-062", func(t *testing.T, m wf.Message) {
			if m.Reply.Accepted || m.Reply.Reason != "Insufficient context: no test plan provided" {
				t.Errorf("reply %+v", m.Reply)
			}
		}},
	}
	for n := 1; n <= 7; n++ {
		env := example(t, n)
		for form, body := range map[string]string{
			"Object": env,
			"JSON":   content(env),
			"Prefix": content(Prefix + env),
			"Padded": content("\n  " + Prefix + env + "\n"),
		} {
			t.Run("Example"+string(rune('0'+n))+"/"+form, func(t *testing.T) {
				m, r := Detect([]byte(body))
				if r != nil {
					t.Fatalf("rejected: %v", r)
				}
				w := want[n]
				if m.Type != w.typ || m.TaskID != w.task || m.ToAgent != "dispatcher" && n != 5 {
					t.Errorf("message %+v", m)
				}
				w.check(t, m)
			})
		}
	}
}

// TestDetectRejects covers the document's validation errors and its
// error tables' reasons that a message alone decides.
func TestDetectRejects(t *testing.T) {
	ex1 := example(t, 1)
	ex3 := example(t, 3)
	ex5 := example(t, 5)
	edit := func(env string, f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(env), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	payload := func(m map[string]any) map[string]any { return m["payload"].(map[string]any) }
	big := strings.Repeat("x", MaxText+1)
	many := slices.Repeat([]string{"x"}, MaxItems+1)
	cases := []struct {
		name, body   string
		event        string
		reason, path string
	}{
		{"NotJSON", `{"protocol":`, wf.EventRejected, wf.ReasonInvalidJSON, ""},
		{"NotAnObject", `[1,2]`, wf.EventRejected, wf.ReasonInvalidJSON, ""},
		{"ContentNotJSON", content("hello there"), wf.EventRejected, wf.ReasonInvalidJSON, "content"},
		{"PrefixNotJSON", content(Prefix + "{nope"), wf.EventRejected, wf.ReasonInvalidJSON, "content"},
		{"ContentNotString", `{"content": 5}`, wf.EventRejected, wf.ReasonInvalidEnvelope, "content"},
		{"NoProtocol", edit(ex1, func(m map[string]any) { delete(m, "protocol") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "protocol"},
		{"OtherProtocol", edit(ex1, func(m map[string]any) { m["protocol"] = "amp" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "protocol"},
		{"Version2", edit(ex1, func(m map[string]any) { m["version"] = 2 }), wf.EventRejected, wf.ReasonInvalidEnvelope, "version"},
		{"VersionString", edit(ex1, func(m map[string]any) { m["version"] = "1" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "version"},
		{"BadTaskID", edit(ex1, func(m map[string]any) { m["taskId"] = "TASK-2026-2-09-057" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "taskId"},
		{"NoFromAgent", edit(ex1, func(m map[string]any) { delete(m, "fromAgent") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "fromAgent"},
		{"NoToAgent", edit(ex1, func(m map[string]any) { m["toAgent"] = "" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "toAgent"},
		{"BadSentAt", edit(ex1, func(m map[string]any) { m["sentAt"] = "yesterday" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "sentAt"},
		{"NoPayload", edit(ex1, func(m map[string]any) { delete(m, "payload") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload"},
		{"PayloadNotObject", edit(ex1, func(m map[string]any) { m["payload"] = "x" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload"},
		{"UnknownType", edit(ex1, func(m map[string]any) { m["type"] = "task.cancel" }), wf.EventUnknown, "", ""},
		{"InvalidOutcome", edit(ex1, func(m map[string]any) { payload(m)["outcome"] = "finished" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.outcome"},
		{"NoSummaryRef", edit(ex1, func(m map[string]any) { delete(payload(m), "summaryRef") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.summaryRef"},
		{"NoTests", edit(ex1, func(m map[string]any) { delete(payload(m), "tests") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.tests"},
		{"TestsIncomplete", edit(ex1, func(m map[string]any) { payload(m)["tests"] = map[string]any{"total": 1} }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.tests"},
		{"NoNotes", edit(ex1, func(m map[string]any) { delete(payload(m), "notes") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.notes"},
		{"BlockedWithoutBlockers", edit(ex1, func(m map[string]any) { payload(m)["outcome"] = "blocked" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.blockers"},
		{"DeliverablesNotStrings", edit(ex1, func(m map[string]any) { payload(m)["deliverables"] = []int{1} }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.deliverables"},
		{"StatusUpdateEmpty", edit(ex3, func(m map[string]any) { delete(payload(m), "progress"); delete(payload(m), "notes") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload"},
		{"StatusUpdateUnknownStatus", edit(ex3, func(m map[string]any) { payload(m)["status"] = "paused" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.status"},
		{"StatusUpdateNoAgent", edit(ex3, func(m map[string]any) { delete(payload(m), "agentId") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.agentId"},
		{"StatusUpdateMismatch", edit(ex3, func(m map[string]any) { payload(m)["taskId"] = "TASK-2026-02-09-001" }), wf.EventRejected, wf.ReasonTaskIDMismatch, "payload.taskId"},
		{"HandoffMismatch", edit(ex5, func(m map[string]any) { payload(m)["taskId"] = "TASK-2026-02-09-099" }), wf.EventRejected, wf.ReasonTaskIDMismatch, "payload.taskId"},
		{"HandoffNoDueBy", edit(ex5, func(m map[string]any) { delete(payload(m), "dueBy") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.dueBy"},
		{"HandoffBadParent", edit(ex5, func(m map[string]any) { payload(m)["parentTaskId"] = "T-1" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.parentTaskId"},
		{"HandoffOutputsNotList", edit(ex5, func(m map[string]any) { payload(m)["expectedOutputs"] = "all" }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.expectedOutputs"},
		{"ReplyNoAccepted", edit(example(t, 6), func(m map[string]any) { delete(payload(m), "accepted") }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.accepted"},
		{"NotesTooLong", edit(ex1, func(m map[string]any) { payload(m)["notes"] = big }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.notes"},
		{"BlockerTooLong", edit(ex1, func(m map[string]any) { payload(m)["blockers"] = []string{"a", big} }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.blockers[1]"},
		{"TooManyDeliverables", edit(ex1, func(m map[string]any) { payload(m)["deliverables"] = many }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.deliverables"},
		{"ProgressTooLong", edit(ex3, func(m map[string]any) { payload(m)["progress"] = big }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.progress"},
		{"StatusNotesTooLong", edit(ex3, func(m map[string]any) { payload(m)["notes"] = big }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.notes"},
		{"StatusTooManyBlockers", edit(ex3, func(m map[string]any) { payload(m)["blockers"] = many }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.blockers"},
		{"StatusBlockerTooLong", edit(ex3, func(m map[string]any) { payload(m)["blockers"] = []string{big} }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.blockers[0]"},
		{"HandoffTooManyConstraints", edit(ex5, func(m map[string]any) { payload(m)["constraints"] = many }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.constraints"},
		{"ReplyReasonTooLong", edit(example(t, 7), func(m map[string]any) { payload(m)["reason"] = big }), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload.reason"},
		{"FromAgentTooLong", edit(ex1, func(m map[string]any) { m["fromAgent"] = strings.Repeat("a", MaxName+1) }), wf.EventRejected, wf.ReasonInvalidEnvelope, "fromAgent"},
		{"PayloadTooLarge", edit(ex3, func(m map[string]any) {
			payload(m)["blockers"] = slices.Repeat([]string{strings.Repeat("b", MaxText)}, MaxPayload/MaxText)
		}), wf.EventRejected, wf.ReasonInvalidEnvelope, "payload"},
		{"ReplyMismatch", edit(example(t, 7), func(m map[string]any) { payload(m)["taskId"] = "TASK-2026-02-09-061" }), wf.EventRejected, wf.ReasonTaskIDMismatch, "payload.taskId"},
	}
	for _, c := range cases {
		for form, body := range map[string]string{"Object": c.body, "Prefix": content(Prefix + c.body)} {
			if form == "Prefix" && (c.path == "content" || c.name == "NotAnObject" || strings.HasPrefix(c.body, `{"content"`)) {
				continue
			}
			t.Run(c.name+"/"+form, func(t *testing.T) {
				_, r := Detect([]byte(body))
				if r == nil {
					t.Fatal("taken")
				}
				if r.Event != c.event || r.Reason != c.reason {
					t.Errorf("event %s reason %q, want %s %q (%v)", r.Event, r.Reason, c.event, c.reason, r)
				}
				if c.path != "" && !hasPath(r, c.path) {
					t.Errorf("fields %v do not name %s", r.Fields, c.path)
				}
				if c.event == wf.EventUnknown && (r.Type != "task.cancel" || r.Payload()["type"] != "task.cancel") {
					t.Errorf("unknown type %q, payload %v", r.Type, r.Payload())
				}
				if c.event == wf.EventRejected && r.Payload()["reason"] != c.reason {
					t.Errorf("payload %v", r.Payload())
				}
			})
		}
	}
}

func hasPath(r *Rejection, p string) bool {
	for _, f := range r.Fields {
		if f.Path == p {
			return true
		}
	}
	return false
}

func TestDetectReadsWhatItCan(t *testing.T) {
	var m map[string]any
	_ = json.Unmarshal([]byte(example(t, 1)), &m)
	m["payload"].(map[string]any)["outcome"] = "x"
	b, _ := json.Marshal(m)
	_, r := Detect(b)
	if r == nil || r.TaskID != "TASK-2026-02-09-057" || r.Actor != "swe-backend" {
		t.Errorf("rejection %+v: the task and actor are logged with it", r)
	}
}

func TestStatusAlias(t *testing.T) {
	var m map[string]any
	_ = json.Unmarshal([]byte(example(t, 4)), &m)
	m["payload"].(map[string]any)["status"] = "in-progress"
	b, _ := json.Marshal(m)
	msg, r := Detect(b)
	if r != nil || msg.Status.Status != wf.StatusInProgress {
		t.Errorf("in-progress read as %q (%v)", msg.Status.Status, r)
	}
}

// TestHandoffBadCriteria: invalid acceptance criteria do not stop a
// handoff; the schema error goes with it.
func TestHandoffBadCriteria(t *testing.T) {
	var m map[string]any
	_ = json.Unmarshal([]byte(example(t, 5)), &m)
	m["payload"].(map[string]any)["acceptanceCriteria"] = "all of them"
	b, _ := json.Marshal(m)
	msg, r := Detect(b)
	if r != nil {
		t.Fatalf("rejected: %v", r)
	}
	if len(msg.Handoff.AcceptanceCriteria) != 0 || len(msg.Warnings) != 1 || !strings.HasPrefix(msg.Warnings[0], "payload.acceptanceCriteria: ") {
		t.Errorf("criteria %q warnings %q", msg.Handoff.AcceptanceCriteria, msg.Warnings)
	}
}
