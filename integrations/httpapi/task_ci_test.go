package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

func TestTaskCI(t *testing.T) {
	h := newHarness(t, false)
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, r := range []ssot.CIRound{
		{Round: 1, Subtask: "S1", Commit: "abc", State: ssot.CIRoundFailed, Failing: []string{"test"}, Log: "FAIL x_test.go:3"},
		{Round: 2, Subtask: "S1", Commit: "def", State: ssot.CIRoundPassed},
	} {
		if err := ssot.SaveCIRound(ctx, h.store, "T-2026-044", r, at); err != nil {
			t.Fatal(err)
		}
	}
	h.tasks.state = task.State{TaskID: "T-2026-044", CI: ssot.CIRoundPassed, CIRound: 2}
	r := h.do(t, "GET", "/v1/tasks/T-2026-044/ci", reviewerToken, "")
	wantStatus(t, r, http.StatusOK)
	var out TaskCIResponse
	r.decode(t, &out)
	if out.CI != CIOn || out.State != "passed" || len(out.Rounds) != 2 {
		t.Fatalf("answer %+v; want ci on, passed, 2 rounds", out)
	}
	if r1 := out.Rounds[0]; r1.State != "failed" || r1.Log != "FAIL x_test.go:3" || r1.Commit != "abc" || !r1.FinishedAt.Equal(at) {
		t.Errorf("round 1 %+v", r1)
	}

	// A task without CI says off, with no rounds: not passed.
	h.tasks.state = task.State{TaskID: "T-2026-045", CI: task.CIOff}
	r = h.do(t, "GET", "/v1/tasks/T-2026-045/ci", reviewerToken, "")
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != `{"task_id":"T-2026-045","ci":"off","state":"off","rounds":[]}`+"\n" {
		t.Errorf("without CI: %s", r.body)
	}

	r = h.do(t, "GET", "/v1/tasks/nope/ci", reviewerToken, "")
	wantStatus(t, r, http.StatusBadRequest)
	r = h.do(t, "GET", "/v1/tasks/T-2026-044/ci", "", "")
	wantStatus(t, r, http.StatusUnauthorized)
}

func TestTaskCILog(t *testing.T) {
	h := newHarness(t, false)
	commit := strings.Repeat("ab", 20)
	if err := h.store.PutFile(context.Background(), "T-2026-044", ssot.CILogName(commit), []byte("ok 1\nFAIL 2\n")); err != nil {
		t.Fatal(err)
	}
	r := h.do(t, "GET", ssot.CILogPath("T-2026-044", commit), reviewerToken, "")
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != "ok 1\nFAIL 2\n" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("log %q (%s)", r.body, r.header.Get("Content-Type"))
	}
	r = h.do(t, "GET", ssot.CILogPath("T-2026-044", strings.Repeat("cd", 20)), reviewerToken, "")
	wantStatus(t, r, http.StatusNotFound)
	r = h.do(t, "GET", ssot.CILogPath("T-2026-044", "abc123"), reviewerToken, "")
	wantStatus(t, r, http.StatusBadRequest)
	if e := r.errorBody(t); !hasField(e.Fields, "commit") {
		t.Errorf("fields %+v do not name commit", e.Fields)
	}
}
