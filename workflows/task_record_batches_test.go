package workflows

import (
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// batchKinds names each stored batch by the kinds of its entries' ids
// (plan, task_dispatch, ack, ...), with "release" for a lease release.
func batchKinds(ins []activities.RecordInput) [][]string {
	out := make([][]string, len(ins))
	for i, in := range ins {
		for _, e := range in.Entries {
			kind, _, _ := strings.Cut(e.ID, "-")
			out[i] = append(out[i], kind)
		}
		if in.Release != nil {
			out[i] = append(out[i], "release")
		}
	}
	return out
}

// TestRecordBatches: an approved lifecycle writes what the run loop
// records around its git checks and its lease take in the batch of the
// message that follows, and ends with one batch holding the verdict, its
// ACK, the final state and the lease's release.
func TestRecordBatches(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Policy.CI = false })
	direct(h)
	h.round(0)
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
	}
	want := [][]string{
		{"plan", "task_dispatch"},
		{"ack"},
		{"task_result", "ack", "review_request"},
		{"ack"},
		{"review_verdict", "ack", "release"},
	}
	got := batchKinds(h.recordIns)
	if len(got) != len(want) {
		t.Fatalf("batches %q, want %q", got, want)
	}
	for i := range want {
		if strings.Join(got[i], " ") != strings.Join(want[i], " ") {
			t.Errorf("batch %d: %q, want %q", i+1, got[i], want[i])
		}
	}
}
