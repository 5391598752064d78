package dashboard

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// The task page lists each CI round, newest first, with its failing
// checks and log; a task without CI says so, not "passed".
func TestTaskPageCI(t *testing.T) {
	f := newFixture(t, testTokens)
	seedTask(t, f.db, "T-2026-006", 0)
	ctx := context.Background()
	for i, r := range []ssot.CIRound{
		{Round: 1, Subtask: "s1", Commit: "0123456789abcdef", State: ssot.CIRoundFailed, Failing: []string{"unit-tests", "lint"}, Log: "FAIL <TestHealth>", LogURL: "https://ci.example/run/1"},
		{Round: 2, Subtask: "s1", Commit: "fedcba9876543210", State: ssot.CIRoundPending},
	} {
		if err := ssot.SaveCIRound(ctx, f.db, "T-2026-006", r, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/tasks/T-2026-006", nil, nil)
	for _, want := range []string{`<h2 id="h-ci">CI <span class="count">2</span></h2>`, `<tr class="ci-failed">`, `<tr class="ci-pending">`,
		"unit-tests, lint", "<code>0123456789ab</code>", "FAIL &lt;TestHealth&gt;", `<a href="https://ci.example/run/1">whole log</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
	if strings.Index(page, "ci-pending") > strings.Index(page, "ci-failed") {
		t.Error("the CI rounds are not newest first")
	}

	seedTask(t, f.db, "T-2026-007", 0)
	st := taskState(t, "T-2026-007", 2, task.StatusInReview, nil)
	var view map[string]any
	if err := json.Unmarshal(st.State, &view); err != nil {
		t.Fatal(err)
	}
	view["ci"] = task.CIOff
	st.State = mustJSON(t, view)
	if _, err := f.db.Save(ctx, "T-2026-007", nil, &st); err != nil {
		t.Fatal(err)
	}
	_, page = c.do("GET", "/tasks/T-2026-007", nil, nil)
	for _, want := range []string{"No CI: the task's policy has none", "<dd>no CI (ci.provider none)</dd>"} {
		if !strings.Contains(page, want) {
			t.Errorf("task page without CI lacks %q", want)
		}
	}
}
