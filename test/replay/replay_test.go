// Package replay replays recorded task histories against the current
// workflow code: a change that would break running tasks fails here.
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

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// TestReplay replays every history in testdata: tasks started by older
// ampflow versions must go on under this one. The files hold the
// workflow's one shape so far. After a change behind workflow.GetVersion
// ("Versioning and replay" in docs/architecture.md says how to make one),
// keep the files running tasks may still have by renaming them (git mv
// approved.json before_x_approved.json), then record the new shape with
// the generator in test/e2e, which starts an embedded `ampflow dev`:
//
//	AMPFLOW_RECORD_HISTORIES=1 go test ./test/e2e/ -run TestRecordHistories -count=1
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d recorded histories in testdata, want at least 3", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.Task, workflow.RegisterOptions{Name: task.WorkflowType})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Errorf("replaying %s: %v", f, err)
			}
		})
	}
}

// TestRecordedShape checks that the histories are of a shape the workflow
// has, not of one it dropped: each task asks the worker for its policy in
// a local activity first, and runs its git checks and SSOT batches as
// local activities too, but not the signature checks of its submissions.
func TestRecordedShape(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			local, regular := activities(t, f)
			if len(local) == 0 || local[0] != "TaskPolicy" {
				t.Errorf("local activities %v, want TaskPolicy first", local)
			}
			for _, want := range []string{"CheckBranch", "Record"} {
				if !slices.Contains(local, want) {
					t.Errorf("no local activity %s; local: %v", want, local)
				}
				if slices.Contains(regular, want) {
					t.Errorf("%s ran as a regular activity; regular: %v", want, regular)
				}
			}
			if n := submitVerifies(t, f); n != 0 {
				t.Errorf("%d submit updates verified in a local activity; their validator checks them", n)
			}
		})
	}
}

// submitVerifies counts the VerifyAnswer local activities run inside a
// submit update, between its acceptance and its completion.
func submitVerifies(t *testing.T, path string) int {
	t.Helper()
	h := readHistory(t, path)
	open, n := map[string]bool{}, 0
	for _, e := range h.Events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			req := e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest()
			if req.GetInput().GetName() == task.UpdateSubmit {
				open[req.GetMeta().GetUpdateId()] = true
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
			delete(open, e.GetWorkflowExecutionUpdateCompletedEventAttributes().GetMeta().GetUpdateId())
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if len(open) > 0 && slices.Contains(markerActivities(e), "VerifyAnswer") {
				n++
			}
		}
	}
	return n
}

func readHistory(t *testing.T, path string) *historypb.History {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h historypb.History
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &h); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return &h
}

// markerActivities names the local activities a marker records.
func markerActivities(e *historypb.HistoryEvent) []string {
	a := e.GetMarkerRecordedEventAttributes()
	if a.GetMarkerName() != "LocalActivity" {
		return nil
	}
	var names []string
	for _, p := range a.GetDetails()["data"].GetPayloads() {
		var m struct{ ActivityType string }
		if err := json.Unmarshal(p.GetData(), &m); err == nil && m.ActivityType != "" {
			names = append(names, m.ActivityType)
		}
	}
	return names
}

// activities lists a history's local activities (from their markers) and
// regular activities, in order.
func activities(t *testing.T, path string) (local, regular []string) {
	t.Helper()
	for _, e := range readHistory(t, path).Events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			local = append(local, markerActivities(e)...)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			regular = append(regular, e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		}
	}
	return local, regular
}
