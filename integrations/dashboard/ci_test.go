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
		{Round: 3, Subtask: "s2", Commit: strings.Repeat("ab", 20), State: ssot.CIRoundPassed, LogKept: true},
	} {
		if err := ssot.SaveCIRound(ctx, f.db, "T-2026-006", r, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/tasks/T-2026-006", nil, nil)
	for _, want := range []string{`<h2 id="h-ci">CI <span class="count">3</span></h2>`, `<a href="/tasks/T-2026-006/ci/logs/` + strings.Repeat("ab", 20) + `">whole log</a>`, `<tr class="ci-failed">`, `<tr class="ci-pending">`,
		"unit-tests, lint", "<code>0123456789ab</code>", "FAIL &lt;TestHealth&gt;", `<a href="https://ci.example/run/1">whole log</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
	if strings.Index(page, "ci-pending") > strings.Index(page, "ci-failed") {
		t.Error("the CI rounds are not newest first")
	}

	seedTask(t, f.db, "T-2026-007", 0)
	// The whole log a command provider kept has a page of its own.
	if err := f.db.PutFile(ctx, "T-2026-006", ssot.CILogName(strings.Repeat("ab", 20)), []byte("ok <pkg>\n")); err != nil {
		t.Fatal(err)
	}
	resp, logPage := c.do("GET", "/tasks/T-2026-006/ci/logs/"+strings.Repeat("ab", 20), nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(logPage, `<pre class="cilog">ok &lt;pkg&gt;`) {
		t.Errorf("the CI log page: %d, lacks the log", resp.StatusCode)
	}
	if resp, _ := c.do("GET", "/tasks/T-2026-006/ci/logs/"+strings.Repeat("cd", 20), nil, nil); resp.StatusCode != 404 {
		t.Errorf("a log not kept: %d, want 404", resp.StatusCode)
	}
	if resp, _ := c.do("GET", "/tasks/T-2026-006/ci/logs/abc", nil, nil); resp.StatusCode != 404 {
		t.Errorf("a short commit: %d, want 404", resp.StatusCode)
	}

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
	for _, want := range []string{"No CI: the task's policy has none", "<dd>no CI</dd>"} {
		if !strings.Contains(page, want) {
			t.Errorf("task page without CI lacks %q", want)
		}
	}
}
