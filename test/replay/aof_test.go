package replay

import (
	"path/filepath"
	"slices"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/ampflow/ampflow/workflows/aof"
)

// TestReplayAOF replays the recorded AOF task histories: tasks started by
// older ampflow versions must go on under this one. Record them again
// after a change behind workflow.GetVersion (keeping the files running
// tasks may still have) with
//
//	AMPFLOW_RECORD_HISTORIES=1 go test ./test/e2e/ -run TestRecordAOFHistories -count=1
func TestReplayAOF(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "aof", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d recorded AOF histories, want at least 3", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(aof.TaskWorkflow, aof.RegisterOptions())
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Errorf("replaying %s: %v", f, err)
			}
			_, regular := activities(t, f)
			for _, want := range []string{"TaskPolicy", "SaveAOF", "AcquireAOFLease", "ReleaseAOFLease"} {
				if !slices.Contains(regular, want) {
					t.Errorf("no %s activity in %v", want, regular)
				}
			}
		})
	}
}

// TestReplayAOFAgentReviews replays the recorded reviews by the reviewer
// agent (aof.review: agent), recorded with
//
//	AMPFLOW_RECORD_HISTORIES=1 go test ./test/e2e/ -run TestRecordAOFAgentReviewHistories -count=1
func TestReplayAOFAgentReviews(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "aof_review", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("%d recorded agent reviews, want at least 2", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(aof.AgentReviewWorkflow, aof.RegisterAgentReviewOptions())
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Errorf("replaying %s: %v", f, err)
			}
			_, regular := activities(t, f)
			for _, want := range []string{"SaveAgentReview", "Deliver"} {
				if !slices.Contains(regular, want) {
					t.Errorf("no %s activity in %v", want, regular)
				}
			}
		})
	}
}
