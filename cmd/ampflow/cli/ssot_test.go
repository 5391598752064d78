package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// testSSOT opens an SSOT on SQLite in the test's directory holding the
// open decisions ds and the messages msgs waiting in agents' inboxes,
// saved as the task workflow's record saves them.
func testSSOT(t *testing.T, ds []decision.Decision, msgs []amp.Message) *ssot.DB {
	t.Helper()
	ctx := context.Background()
	db, err := ssot.Open(ctx, filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	states := map[string]*ssot.TaskState{}
	state := func(id string) *ssot.TaskState {
		if states[id] == nil {
			states[id] = &ssot.TaskState{TaskID: id, Rev: 1, Status: string(task.StatusInProgress), StartedAt: testNow, UpdatedAt: testNow, State: json.RawMessage(`{}`)}
		}
		return states[id]
	}
	entries := map[string][]ssot.Entry{}
	for _, d := range ds {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		// The workflow records a decision as it opens it.
		entries[d.Subject] = append(entries[d.Subject], ssot.Entry{ID: d.ID, Kind: string(ssot.KindDecision), RecordedAt: d.RaisedAt, Body: b})
		st := state(d.Subject)
		st.Pending = append(st.Pending, ssot.PendingDecision{ID: d.ID, Subject: d.Subject, Kind: string(d.Kind), RaisedAt: d.RaisedAt, Body: b})
	}
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339, m.Timestamp)
		if err != nil {
			t.Fatal(err)
		}
		st := state(m.TaskID)
		st.Outbox = append(st.Outbox, ssot.OutboxMessage{MsgID: m.MsgID, TaskID: m.TaskID, Role: string(m.To), Type: string(m.Type), SentAt: at, Body: b})
	}
	for id, st := range states {
		if _, err := db.Save(ctx, id, entries[id], st); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// storeWithTasks is an SSOT holding the listed fields of tasks.
func storeWithTasks(t *testing.T, tasks []workflows.TaskSummary) *ssot.DB {
	t.Helper()
	db := testSSOT(t, nil, nil)
	for _, s := range tasks {
		st := ssot.TaskState{TaskID: s.TaskID, Rev: 1, Status: string(s.Status), Risk: s.Risk, Repo: s.Repo,
			RejectCount: int(s.RejectCount), StartedAt: s.StartedAt, UpdatedAt: s.StartedAt, State: json.RawMessage(`{}`)}
		if _, err := db.Save(context.Background(), s.TaskID, nil, &st); err != nil {
			t.Fatal(err)
		}
	}
	return db
}
