package aof

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestResolveCompletionTransitions(t *testing.T) {
	cases := []struct {
		status  Status
		review  bool
		outcome Outcome
		want    []Status
	}{
		{StatusInProgress, true, OutcomeDone, []Status{StatusReview}},
		{StatusInProgress, false, OutcomeDone, []Status{StatusReview, StatusDone}},
		{StatusDone, true, OutcomeDone, nil},
		{StatusDone, false, OutcomeDone, nil},
		{StatusInProgress, true, OutcomeBlocked, []Status{StatusBlocked}},
		{StatusInProgress, true, OutcomeNeedsReview, []Status{StatusReview}},
		{StatusInProgress, false, OutcomePartial, []Status{StatusReview}},
		{StatusInProgress, true, "other", nil},
	}
	for _, c := range cases {
		if got := ResolveCompletionTransitions(c.status, c.review, c.outcome); !slices.Equal(got, c.want) {
			t.Errorf("%s review=%v %s: %v, want %v", c.status, c.review, c.outcome, got, c.want)
		}
	}
}

func TestValidTransition(t *testing.T) {
	valid := map[[2]Status]bool{
		{StatusBacklog, StatusReady}: true, {StatusReady, StatusInProgress}: true,
		{StatusInProgress, StatusReview}: true, {StatusInProgress, StatusBlocked}: true,
		{StatusReview, StatusDone}: true, {StatusBlocked, StatusReady}: true,
		{StatusInProgress, StatusReady}: true, {StatusReady, StatusBlocked}: true,
		{StatusBacklog, StatusBlocked}: true, {StatusReady, StatusBacklog}: true,
		{StatusReview, StatusReady}: true, {StatusReview, StatusBlocked}: true,
	}
	for _, from := range Statuses() {
		for _, to := range Statuses() {
			if got := ValidTransition(from, to); got != valid[[2]Status{from, to}] {
				t.Errorf("%s → %s valid = %v", from, to, got)
			}
		}
	}
}

func TestWorkLogLine(t *testing.T) {
	at := time.Date(2026, 2, 9, 21, 5, 0, 0, time.UTC)
	cases := []struct {
		progress, notes string
		blockers        []string
		want            string
	}{
		{"Implemented core logic", "ETA after credentials arrive", []string{"Awaiting API key"},
			"- 2026-02-09T21:05:00.000Z Progress: Implemented core logic | Notes: ETA after credentials arrive | Blockers: Awaiting API key"},
		{"Executed 50/100 test cases", "No issues found so far", nil,
			"- 2026-02-09T21:05:00.000Z Progress: Executed 50/100 test cases | Notes: No issues found so far"},
		{"", "", []string{"a", "b"}, "- 2026-02-09T21:05:00.000Z Blockers: a, b"},
		{"", "", nil, ""},
	}
	for _, c := range cases {
		if got := WorkLogLine(at, c.progress, c.notes, c.blockers); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func TestHandoffMarkdown(t *testing.T) {
	h := HandoffRequest{FromAgent: "swe-backend", ToAgent: "swe-qa", DueBy: "2026-02-10T12:00:00.000Z",
		AcceptanceCriteria: []string{"All tests pass", "Update docs"}, ExpectedOutputs: []string{"tests/report.md", "docs/QA.md"},
		ContextRefs: []string{"tasks/in-progress/TASK-2026-02-09-057.md"}, Constraints: []string{"No new dependencies"}}
	want := "# Handoff Request\n\n**From:** swe-backend\n**To:** swe-qa\n**Due By:** 2026-02-10T12:00:00.000Z\n\n" +
		"## Acceptance Criteria\n\n- All tests pass\n- Update docs\n\n## Expected Outputs\n\n- tests/report.md\n- docs/QA.md\n\n" +
		"## Context References\n\n- tasks/in-progress/TASK-2026-02-09-057.md\n\n## Constraints\n\n- No new dependencies\n"
	if got := HandoffMarkdown(h); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWorkflowID(t *testing.T) {
	id := WorkflowID("TASK-2026-02-09-057")
	if got, ok := TaskIDOf(id); !ok || got != "TASK-2026-02-09-057" {
		t.Errorf("TaskIDOf(%s) = %s %v", id, got, ok)
	}
	if _, ok := TaskIDOf("T-2026-001"); ok {
		t.Error("an AMP task id read as an AOF workflow")
	}
}

func TestArtifactTimestamps(t *testing.T) {
	at := time.Date(2026, 2, 9, 21, 10, 0, 0, time.UTC)
	b, err := json.Marshal(RunResult{TaskID: testTask, CompletedAt: At(at)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"completedAt":"2026-02-09T21:10:00.000Z"`) {
		t.Errorf("run_result.json %s", b)
	}
	var back RunResult
	if err := json.Unmarshal(b, &back); err != nil || !back.CompletedAt.Equal(at) {
		t.Errorf("read back %v: %v", back.CompletedAt, err)
	}
}
