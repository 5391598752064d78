package aof

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp/task"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// TestCompletionAfterDone: once a done task's workflow has ended, the
// report it took, sent again, is a no-op (200, unchanged), and any other
// report is refused 409 not_running and logged, as docs/aof.md says.
func TestCompletionAfterDone(t *testing.T) {
	r := newRig(t)
	const id = "TASK-2026-02-09-057"
	if st, out := r.do("POST", "/v1/aof/tasks", `{"taskId":"`+id+`","title":"API"}`); st != 201 {
		t.Fatalf("create: %d %v", st, out)
	}
	if st, out := r.do("POST", "/v1/aof/messages", example(t, 1)); st != 200 {
		t.Fatalf("the report: %d %v", st, out)
	}
	// The task as the workflow leaves it: done, holding the report.
	m := r.tasks.msgs[0].Message
	c := m.Completion
	row, err := r.store.AOFTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var done wf.Task
	if err := json.Unmarshal(row.Body, &done); err != nil {
		t.Fatal(err)
	}
	done.Status = wf.StatusDone
	done.Result = &wf.RunResult{TaskID: id, AgentID: m.FromAgent, CompletedAt: wf.At(m.SentAt), Outcome: c.Outcome,
		SummaryRef: c.SummaryRef, Deliverables: c.Deliverables, Tests: c.Tests, Blockers: c.Blockers, Notes: c.Notes}
	r.tasks.save(done)
	r.tasks.err = task.Errorf(wf.CodeTaskNotFound, "workflow aof-%s has ended", id)

	st, out := r.do("POST", "/v1/aof/messages", example(t, 1))
	if st != 200 || out["changed"] == true {
		t.Errorf("the same report again: %d %v, want 200 unchanged", st, out)
	}
	st, out = r.do("POST", "/v1/aof/messages", strings.Replace(example(t, 1), `"outcome": "done"`, `"outcome": "partial"`, 1))
	if st != 409 || errCode(out) != string(wf.CodeNotRunning) {
		t.Errorf("another report: %d %v, want 409 not_running", st, out)
	}
	if evs := r.events(); evs[len(evs)-1] != wf.EventRejected+":not_running" {
		t.Errorf("events %v, want the refusal logged last", evs)
	}
}
