package activities

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
)

// TestRecordReleaseWithoutLeases: a batch with a release on a worker that
// cannot change leases in the store writes nothing and answers not
// released, so the workflow releases through the lease system and writes
// the batch again.
func TestRecordReleaseWithoutLeases(t *testing.T) {
	ssotEngines(t, func(t *testing.T, s *TaskRecord) {
		ctx := context.Background()
		in := RecordInput{TaskID: "T-2026-001", Rev: 3,
			Entries: []RecordEntry{{ID: "E-1", Kind: ssot.KindEvent, Body: json.RawMessage(`{"n":1}`)}},
			Task:    json.RawMessage(`{"status":"done"}`),
			Release: &BranchLeaseInput{TaskID: "T-2026-001", Repo: "/src/app", Branch: "main", LeaseID: "L1.x", Version: 1, Direct: true}}
		out, err := s.Record(ctx, in)
		if err != nil || out.Released || out.Written != 0 {
			t.Fatalf("%+v %v, want nothing written and not released", out, err)
		}
		if _, err := s.Store.Get(ctx, "E-1"); !errors.Is(err, ssot.ErrNotFound) {
			t.Errorf("the batch's record: %v, want not found", err)
		}
		in.Release = nil
		if out, err := s.Record(ctx, in); err != nil || out.Written != 1 {
			t.Errorf("the batch again without the release: %+v %v, want 1 written", out, err)
		}
	})
}
