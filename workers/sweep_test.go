package workers

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// The open rows of a workflow that no longer runs are cleared and its
// task marked terminated; those of a running one stay.
func TestSweepClearsEndedWorkflows(t *testing.T) {
	ctx := context.Background()
	db, err := ssot.Open(ctx, filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, id := range []string{"T-2026-001", "T-2026-002"} {
		st := ssot.TaskState{TaskID: id, Rev: 1, Status: string(task.StatusAwaitingApproval), StartedAt: now, UpdatedAt: now, State: json.RawMessage(`{}`),
			Pending: []ssot.PendingDecision{{ID: id + "-d1", Subject: id, Kind: string(task.KindPlanApproval), RaisedAt: now, Body: json.RawMessage(`{}`)}},
			Outbox:  []ssot.OutboxMessage{{MsgID: "task_dispatch-" + id + "-1", TaskID: id, Role: "executor", Type: "task_dispatch", SentAt: now, Body: json.RawMessage(`{}`)}}}
		if _, err := db.Save(ctx, id, nil, &st); err != nil {
			t.Fatal(err)
		}
	}
	running := map[string]bool{"T-2026-001": true}
	sw := sweep{store: db, running: func(_ context.Context, id string) (bool, error) { return running[id], nil }, interval: time.Minute, log: slog.Default()}
	n, err := sw.once(ctx)
	if err != nil || n != 1 {
		t.Fatalf("once = %d, %v; want 1 subject cleared", n, err)
	}
	ds, _, _ := db.Pending(ctx, ssot.Page{})
	msgs, _, _ := db.Inbox(ctx, "executor", ssot.Page{})
	if len(ds) != 1 || ds[0].Subject != "T-2026-001" || len(msgs) != 1 || msgs[0].TaskID != "T-2026-001" {
		t.Errorf("left %+v and %+v; want only T-2026-001's rows", ds, msgs)
	}
	st, err := db.Task(ctx, "T-2026-002")
	if err != nil || st.Status != string(task.StatusTerminated) {
		t.Errorf("T-2026-002 is %q (%v), want terminated", st.Status, err)
	}
	if n, _ := sw.once(ctx); n != 0 {
		t.Errorf("a second sweep cleared %d, want 0", n)
	}
}
