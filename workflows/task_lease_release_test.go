package workflows

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// direct makes the branch lease's acquire take the branch directly in
// the store, as lease.Branches does for a free branch.
func direct(h *harness) {
	h.acquireLease = func(in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
		return activities.BranchLeaseResult{Lease: &task.BranchLease{LeaseID: "L1.d", ResourceKey: activities.BranchKey(in.Repo, in.Branch),
			Version: 1, Direct: true}}, nil
	}
}

// leaseNotes are the lease entries of a state's timeline.
func leaseNotes(raw json.RawMessage) ([]string, task.Status, error) {
	var st task.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, "", err
	}
	var notes []string
	for _, e := range st.Timeline {
		if e.Kind == "lease" {
			notes = append(notes, e.Note)
		}
	}
	return notes, st.Status, nil
}

func TestDirectLeaseRelease(t *testing.T) {
	key := activities.BranchKey("/repos/rhylm", "feature/watch-breath-v2")

	t.Run("InTheLastBatch", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withRunners)
		direct(h)
		h.round(0)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
		}
		if want := []string{"acquire", "release-in-record"}; !slices.Equal(h.leaseCalls, want) {
			t.Errorf("lease calls %v, want %v: no ReleaseBranchLease", h.leaseCalls, want)
		}
		last := h.recordIns[len(h.recordIns)-1]
		if last.Release == nil || last.Release.LeaseID != "L1.d" || last.Release.Version != 1 || !last.Release.Direct ||
			last.Release.ReleasedAt.IsZero() {
			t.Fatalf("the last batch's release %+v, want L1.d at version 1 with its time", last.Release)
		}
		for _, in := range h.recordIns[:len(h.recordIns)-1] {
			if in.Release != nil {
				t.Errorf("batch rev %d carries a release too", in.Rev)
			}
		}
		notes, status, err := leaseNotes(last.Task)
		if err != nil {
			t.Fatal(err)
		}
		if status != task.StatusDone || !slices.Contains(notes, "released "+key) {
			t.Errorf("the releasing batch's state: %s with lease notes %q, want done with the release said", status, notes)
		}
		checkCleanup(t, h)
	})

	t.Run("RetriedWithTheBatch", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		direct(h)
		failed := 0
		h.recordErr = func(in activities.RecordInput) error {
			if in.Release != nil && failed == 0 {
				failed++
				return errors.New("database is locked")
			}
			return nil
		}
		h.round(0)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
		}
		// The failed try stored nothing; the try again carried the release.
		if want := []string{"acquire", "release-in-record"}; failed != 1 || !slices.Equal(h.leaseCalls, want) {
			t.Errorf("%d failed batches, lease calls %v, want 1 and %v", failed, h.leaseCalls, want)
		}
		if last := h.recordIns[len(h.recordIns)-1]; last.Release == nil {
			t.Error("the stored last batch carries no release")
		}
	})

	t.Run("AdoptedGoesThroughTheLeaseSystem", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		direct(h)
		h.leaseMoved = true
		h.round(0)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
		}
		if want := []string{"acquire", "release-in-record", "release"}; !slices.Equal(h.leaseCalls, want) {
			t.Errorf("lease calls %v, want %v", h.leaseCalls, want)
		}
		last := h.recordIns[len(h.recordIns)-1]
		notes, status, err := leaseNotes(last.Task)
		if err != nil {
			t.Fatal(err)
		}
		if last.Release != nil || status != task.StatusDone || !slices.Contains(notes, "released "+key) {
			t.Errorf("the last stored batch: release %+v, %s with lease notes %q, want done, released, no release in it",
				last.Release, status, notes)
		}
	})

	t.Run("AdoptedAndRefused", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		direct(h)
		h.leaseMoved = true
		h.releaseErr = temporal.NewNonRetryableApplicationError("the lease system is away", "Unavailable", nil)
		h.round(0)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
		}
		notes, _, err := leaseNotes(h.recordIns[len(h.recordIns)-1].Task)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(notes, "released "+key) || !slices.ContainsFunc(notes, func(n string) bool {
			return strings.HasPrefix(n, "releasing "+key+": the lease system is away") && strings.HasSuffix(n, "it ends with its TTL")
		}) {
			t.Errorf("lease notes %q, want the failed release said and no release claimed", notes)
		}
	})
}
