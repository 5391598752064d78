package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// TestGetTaskFromStore checks GET /v1/tasks/{id} when the task's workflow
// does not answer: from the store's row when it has one, else the error.
func TestGetTaskFromStore(t *testing.T) {
	const id = "T-2026-070"
	h := newHarness(t, true)
	view, err := json.Marshal(task.State{TaskID: id, Status: task.StatusAwaitingApproval, StartedAt: testNow, UpdatedAt: testNow})
	if err != nil {
		t.Fatal(err)
	}
	st := ssot.TaskState{TaskID: id, Status: string(task.StatusAwaitingApproval), StartedAt: testNow, UpdatedAt: testNow, State: view}
	if _, err := h.store.Save(context.Background(), id, nil, &st); err != nil {
		t.Fatal(err)
	}

	t.Run("Unanswered", func(t *testing.T) {
		h.tasks.err = task.Errorf(task.CodeUnavailable, "reading task %s: no answer within 15s", id)
		r := h.do(t, "GET", "/v1/tasks/"+id, "", "")
		var got task.State
		if r.status != http.StatusOK {
			t.Fatalf("status %d %s, want 200 from the store", r.status, r.body)
		}
		r.decode(t, &got)
		if got.TaskID != id || got.Status != task.StatusAwaitingApproval {
			t.Errorf("answered %+v, want %s awaiting approval", got, id)
		}
	})
	t.Run("NotInStore", func(t *testing.T) {
		h.tasks.err = task.Errorf(task.CodeUnavailable, "no answer")
		if r := h.do(t, "GET", "/v1/tasks/T-2026-071", "", ""); r.status != http.StatusServiceUnavailable {
			t.Errorf("status %d %s, want the workflow's 503", r.status, r.body)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		h.tasks.err = task.Errorf(task.CodeNotFound, "no such task")
		if r := h.do(t, "GET", "/v1/tasks/"+id, "", ""); r.status != http.StatusNotFound {
			t.Errorf("status %d %s, want 404: only an unanswered read falls back", r.status, r.body)
		}
	})
}
