// Package replay replays recorded task histories against the current
// workflow code: a change that would break running tasks fails here.
package replay

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/task"
)

// TestReplay replays every history in testdata: tasks started by older
// ampflow versions must go on under this one. The v0_ files were recorded
// before the changes behind workflow.GetVersion (SSOT writes in a local
// activity, decisions always sent to the worker's notifier); the rev0_
// files after them, still without task.Input.Rev; the others under the
// current task.Revision. To record the current shape again, run the
// generator in test/e2e and keep the older files:
//
//	AMPFLOW_RECORD_HISTORIES=1 go test ./test/e2e/ -run TestRecordHistories
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
