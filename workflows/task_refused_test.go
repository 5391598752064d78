package workflows

import (
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestRefusedStart: a start the check refuses ends the workflow failed
// with a TaskRefused naming the field at fault (not completed), the task
// terminated with the reason, and nothing dispatched.
func TestRefusedStart(t *testing.T) {
	for _, c := range []struct {
		name, errType, field string
	}{
		{"BranchMissing", activities.ErrBranchMissing, "plan.branch"},
		{"NotWorkTree", activities.ErrNotWorkTree, "plan.repo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, testPlan(amp.RiskLow, "S1"))
			h.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
				return activities.CheckBranchResult{}, temporal.NewNonRetryableApplicationError(`branch "feature/member-count" not found`, c.errType, nil)
			}
			res, r := h.runRefused()
			if r.Field != c.field || !strings.Contains(r.Reason, `refused: branch "feature/member-count" not found`) || r.Restarts != 0 {
				t.Errorf("refusal %+v, want field %s and the reason", r, c.field)
			}
			if res.Status != task.StatusTerminated || res.Reason != r.Reason {
				t.Errorf("task %s (%s), want terminated with the refusal's reason", res.Status, res.Reason)
			}
			if n := len(h.deliveredOf(amp.TypeTaskDispatch)); n != 0 {
				t.Errorf("%d dispatches of a refused start", n)
			}
		})
	}
}

// TestRestartAfterRefusal: a start under the id of refused ones
// (Input.Restarts) records its plan under its own id and writes its
// states above every revision of theirs, then runs as any task.
func TestRestartAfterRefusal(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Restarts = 1 })
	h.round(0)
	res := h.run()
	if res.Status != task.StatusDone {
		t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
	}
	first, _ := h.firstRecord()
	if first.ID != PlanRecordID(testTaskID)+"-2" {
		t.Errorf("plan record %s, want %s-2", first.ID, PlanRecordID(testTaskID))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.revs) == 0 || h.revs[0] <= restartRevs {
		t.Errorf("revisions %v, want every one above %d", h.revs, restartRevs)
	}
	rec, err := FirstRecord(h.in, h.in.Policy, time.Now())
	if err != nil || rec.Rev != restartRevs || rec.Entries[0].ID != first.ID {
		t.Errorf("the client's first record: rev %d, id %s, %v; want rev %d under %s", rec.Rev, rec.Entries[0].ID, err, restartRevs, first.ID)
	}
}
