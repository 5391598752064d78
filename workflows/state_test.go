package workflows

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TestCarriedStateOwnsItsTypes: nothing the task carries across
// continue-as-new is a type of package activities, so a change to an
// activity's input or result does not change the carried JSON.
func TestCarriedStateOwnsItsTypes(t *testing.T) {
	actsPkg := reflect.TypeFor[activities.RecordEntry]().PkgPath()
	seen := map[reflect.Type]bool{}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		if typ.PkgPath() == actsPkg {
			t.Errorf("%s is %s, a type of package activities", path, typ)
			return
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(path, typ.Elem())
		case reflect.Map:
			walk(path+"[key]", typ.Key())
			walk(path+"[]", typ.Elem())
		case reflect.Struct:
			for i := range typ.NumField() {
				f := typ.Field(i)
				walk(path+"."+f.Name, f.Type)
			}
		}
	}
	walk("taskState", reflect.TypeFor[taskState]())
}

// TestQueuedEffectsConvert: a queued record, notice and CI reading survive
// the carried JSON and become the activities' input with every field.
func TestQueuedEffectsConvert(t *testing.T) {
	at := time.Date(2026, 2, 26, 14, 32, 7, 0, time.UTC)
	d := decision.Decision{ID: "T-2026-044-d1", Kind: task.KindPlanApproval}
	m := amp.NewMessage(amp.RoleExecutor, amp.RoleAdmin, "T-2026-044", at, &amp.Escalation{
		EscalationType: amp.EscUnknown, Severity: amp.SeverityWarning, TriggeredBy: amp.RoleExecutor,
		Description: "stuck", AffectedMsgs: []string{}, SystemStateSnapshot: map[string]any{"task_status": "in_progress"},
	})
	s := newTaskState(task.Input{TaskID: "T-2026-044"}, at)
	s.Records = []queuedRecord{{ID: "ack-1", Kind: string(ssot.KindAck), Body: json.RawMessage(`{"a":1}`), RecordedAt: at}, {Kind: snapshotKind}}
	s.Notices = []queuedNotice{{Event: string(notify.DecisionOpened), Status: task.StatusSuspended, Decision: &d, Message: &m, Text: "why"}}
	s.CI = newCIReading(activities.CIStatusResult{State: activities.CIFailed, Failing: []string{"lint"}, Checks: map[string]string{"lint": "failed"}, Detail: "output"})

	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back taskState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("reading the carried state back: %v", err)
	}
	again, _ := json.Marshal(&back)
	if !bytes.Equal(b, again) {
		t.Fatalf("carried state changed on the way back:\n%s\n%s", b, again)
	}

	wantEntry := activities.RecordEntry{ID: "ack-1", Kind: ssot.KindAck, Body: json.RawMessage(`{"a":1}`), RecordedAt: at}
	if got := back.Records[0].entry(); !reflect.DeepEqual(got, wantEntry) {
		t.Errorf("record entry %+v; want %+v", got, wantEntry)
	}
	wantNotice := notify.Input{TaskID: "T-2026-044", Event: notify.DecisionOpened, Status: task.StatusSuspended, Decision: &d, Message: &m, Text: "why"}
	// Compared as JSON: a list the decision does not have comes back as
	// [] (decision.Decision writes its lists so), not nil.
	got, _ := json.Marshal(back.Notices[0].input("T-2026-044"))
	if want, _ := json.Marshal(wantNotice); !bytes.Equal(got, want) {
		t.Errorf("notice input %s; want %s", got, want)
	}
	if !back.CI.failed() || back.CI.Failing[0] != "lint" || back.CI.Checks["lint"] != "failed" {
		t.Errorf("CI reading %+v; want the failed lint check", back.CI)
	}
	if (*ciReading)(nil).failed() {
		t.Error("no CI reading reads as failed")
	}
}

// TestReportWarning: a result whose criteria are all null warns, naming
// the executor's note; a result with any value, or none to give, does not.
func TestReportWarning(t *testing.T) {
	yes := true
	for _, c := range []struct {
		name string
		sa   amp.SelfAssessment
		want string
	}{
		{"AllNull", amp.SelfAssessment{CriteriaMet: []*bool{nil, nil}, Notes: []string{"the executor gave no readable final report"}},
			"the executor's report was not read (criteria_met all null): the executor gave no readable final report"},
		{"OneValue", amp.SelfAssessment{CriteriaMet: []*bool{nil, &yes}}, ""},
		{"NoCriteria", amp.SelfAssessment{CriteriaMet: []*bool{}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := amp.Message{MsgID: "task_result-T-2026-001-1", Type: amp.TypeTaskResult, From: amp.RoleExecutor, Payload: &amp.TaskResult{SelfAssessment: c.sa}}
			if got := reportWarning(m); c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
				t.Errorf("reportWarning = %q; want %q", got, c.want)
			}
		})
	}
}
