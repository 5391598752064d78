package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

func TestTaskCI(t *testing.T) {
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tasks := &fakeTasks{}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Tasks: tasks, Store: db}).Handler())
	t.Cleanup(srv.Close)
	env := map[string]string{"AMPFLOW_API_URL": srv.URL}
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, r := range []ssot.CIRound{
		{Round: 1, Subtask: "S1", Commit: "0123456789abcdef", State: ssot.CIRoundFailed, Failing: []string{"go test ./..."}, Log: "--- FAIL: TestX\nFAIL", LogURL: "https://ci.example/run/1"},
		{Round: 2, Subtask: "S1", Commit: "fedcba9876543210", State: ssot.CIRoundPassed, LogKept: true},
	} {
		if err := ssot.SaveCIRound(context.Background(), db, "T-2026-001", r, at); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("Text", func(t *testing.T) {
		tasks.states = []task.State{{CI: "passed", CIRound: 2}}
		r := runFake(t, tasks, "", env, "task", "ci", "T-2026-001", "--log")
		wantExit(t, r, ExitOK)
		for _, want := range []string{"T-2026-001: CI passed\n", "0123456789ab", "failed", "go test ./...", "2026-11-28 10:00:00Z",
			"round 1 log (whole: https://ci.example/run/1):\n    --- FAIL: TestX\n    FAIL\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
		if !strings.Contains(r.stdout, "round 2 log (whole: GET /v1/tasks/T-2026-001/ci/logs/fedcba9876543210):\n") {
			t.Errorf("a round whose whole log is kept does not say where:\n%s", r.stdout)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		tasks.states = []task.State{{CI: "passed", CIRound: 2}}
		r := runFake(t, tasks, "", env, "task", "ci", "T-2026-001", "-o", "json")
		wantExit(t, r, ExitOK)
		var out httpapi.TaskCIResponse
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.CI != "on" || len(out.Rounds) != 2 || out.Rounds[0].Log == "" {
			t.Errorf("stdout %q: %v", r.stdout, err)
		}
	})
	t.Run("NoCI", func(t *testing.T) {
		tasks.states = []task.State{{CI: task.CIOff}}
		r := runFake(t, tasks, "", env, "task", "ci", "T-2026-002")
		wantExit(t, r, ExitOK)
		if !strings.Contains(r.stdout, "T-2026-002: no CI") {
			t.Errorf("stdout %q does not say the task has no CI", r.stdout)
		}
	})
	t.Run("NotReadYet", func(t *testing.T) {
		tasks.states = []task.State{{}}
		r := runFake(t, tasks, "", env, "task", "ci", "T-2026-003")
		wantExit(t, r, ExitOK)
		if r.stdout != "T-2026-003: CI on, not read yet\n" {
			t.Errorf("stdout %q", r.stdout)
		}
	})
	t.Run("BadID", func(t *testing.T) {
		r := runFake(t, tasks, "", env, "task", "ci", "nope")
		wantExit(t, r, ExitUsage)
	})
}
