package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

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
	// Both shapes are kept: gates from before the contract's expiry
	// bound the decision, and a contract gate that expired with it.
	var versioned, unversioned int
	for _, f := range files {
		if slices.Contains(versions(t, f), "gate-expires-at") {
			versioned++
		} else {
			unversioned++
		}
	}
	if versioned == 0 || unversioned == 0 {
		t.Errorf("%d histories with the gate-expires-at version, %d without; want both shapes", versioned, unversioned)
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

// versions lists the change ids of the version markers of history path.
func versions(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h historypb.History
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &h); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	var ids []string
	for _, e := range h.Events {
		a := e.GetMarkerRecordedEventAttributes()
		if e.GetEventType() != enumspb.EVENT_TYPE_MARKER_RECORDED || a.GetMarkerName() != "Version" {
			continue
		}
		for _, p := range a.GetDetails()["change-id"].GetPayloads() {
			var id string
			if json.Unmarshal(p.GetData(), &id) == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
