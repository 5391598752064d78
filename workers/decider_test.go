package workers

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// The bots read the open decisions from the SSOT's index, past a page:
// no running workflow is asked (the worker here has no Temporal client).
func TestBotsReadOpenDecisionsFromTheStore(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.SSOT.URL = filepath.Join(cfg.DataDir, "ampflow.db")
	parts, err := Build(Options{Config: cfg, DecisionKeyFile: filepath.Join(cfg.DataDir, DecisionKeyFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer parts.Close()
	const n = ssot.MaxLimit + 2
	for i := range n {
		id := fmt.Sprintf("T-2026-%03d", i+1)
		d := decision.Decision{ID: id + "-d1", Subject: id, Kind: task.KindPlanApproval, RaisedAt: time.Date(2026, 2, 1, 0, 0, i, 0, time.UTC)}
		body, _ := json.Marshal(d)
		st := ssot.TaskState{TaskID: id, Rev: 1, Status: string(task.StatusAwaitingApproval), StartedAt: d.RaisedAt, UpdatedAt: d.RaisedAt,
			State: json.RawMessage(`{}`), Pending: []ssot.PendingDecision{{ID: d.ID, Subject: id, Kind: string(d.Kind), RaisedAt: d.RaisedAt, Body: body}}}
		if _, err := parts.Store.Save(t.Context(), id, nil, &st); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := decider(parts).Pending(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != n || ds[0].Subject != "T-2026-001" || ds[n-1].ID != fmt.Sprintf("T-2026-%03d-d1", n) {
		t.Errorf("read %d open decisions (first %+v), want %d oldest first", len(ds), ds[0], n)
	}
}
