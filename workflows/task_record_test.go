package workflows

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
)

// The SSOT out of reach for minutes: nothing is dropped and the dispatch
// goes out only once its record is stored.
func TestRecordWaitsForTheStore(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	down := true
	var failed int
	h.recordErr = func(activities.RecordInput) error {
		if down {
			failed++
			return errors.New("connection refused")
		}
		return nil
	}
	deliveredDuring := -1
	h.at(2*time.Minute, func() { deliveredDuring = len(h.deliveredOf(amp.TypeTaskDispatch)) })
	h.at(3*time.Minute, func() {
		h.mu.Lock()
		down = false
		h.mu.Unlock()
	})
	h.at(10*time.Minute, func() { h.env.CancelWorkflow() })
	h.env.ExecuteWorkflow(Task, h.in)

	if failed < 5 {
		t.Fatalf("the store failed %d times, want it down for minutes", failed)
	}
	if len(h.deliveredOf(amp.TypeTaskDispatch)) == 0 {
		t.Fatalf("no dispatch once the store was back")
	}
	if deliveredDuring != 0 {
		t.Errorf("%d dispatches delivered while the store was down, want 0", deliveredDuring)
	}
	ds := h.deliveredOf(amp.TypeTaskDispatch)
	stored := false
	for _, r := range h.records {
		if r.ID == ds[0].MsgID {
			stored = true
		}
	}
	if !stored {
		t.Errorf("dispatch %s delivered but never recorded", ds[0].MsgID)
	}
	if h.records[0].ID != "plan-"+testTaskID {
		t.Errorf("first record %s, want the plan: nothing queued before the outage may be lost", h.records[0].ID)
	}
}

// A record whose id is taken with other content is dropped alone; the
// rest of its batch is stored.
func TestRecordConflictDropsOneEntry(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	conflicted := false
	h.recordErr = func(in activities.RecordInput) error {
		for _, e := range in.Entries {
			if e.ID == "plan-"+testTaskID && !conflicted {
				conflicted = true
				return temporal.NewNonRetryableApplicationError("stored already with another body", activities.ErrRecordConflict, nil, e.ID)
			}
		}
		return nil
	}
	h.at(time.Minute, func() { h.env.CancelWorkflow() })
	h.env.ExecuteWorkflow(Task, h.in)
	if !conflicted {
		t.Fatal("no conflict was raised")
	}
	if len(h.deliveredOf(amp.TypeTaskDispatch)) == 0 {
		t.Fatal("the task stopped after a conflicting record")
	}
	for _, r := range h.records {
		if r.ID == "plan-"+testTaskID {
			t.Errorf("the conflicting record was written")
		}
	}
}
