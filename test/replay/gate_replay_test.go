package replay

import (
	"path/filepath"
	"slices"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/workflows/gate"
)

// TestReplayGates replays the recorded gate histories (testdata/gate):
// gates opened by older ampflow versions must close under this one.
// Record them again with
//
//	AMPFLOW_RECORD_HISTORIES=1 go test ./test/e2e/ -run TestRecordGateHistories -count=1
func TestReplayGates(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "gate", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d recorded gate histories, want at least 3", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(gate.Gate, workflow.RegisterOptions{Name: gate.WorkflowType})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Errorf("replaying %s: %v", f, err)
			}
			local, regular := activities(t, f)
			if len(local) < 2 || local[0] != "GateOpen" || !slices.Contains(local, "TaskPolicy") || !slices.Contains(local, "GateResolve") {
				t.Errorf("local activities %v, want GateOpen first, then TaskPolicy, …, GateResolve", local)
			}
			if slices.Contains(regular, "GateRecord") {
				t.Errorf("GateRecord ran as a regular activity: %v", regular)
			}
		})
	}
}
