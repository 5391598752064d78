package lease

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/lease/leasetest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/activities/ssot/ssottest"
	"github.com/ampflow/ampflow/amp/lease"
)

// TestReleaseInRecord: a task's last record batch ends its direct branch
// lease in the batch's transaction, a run again of the batch changes
// nothing, and the branch is free for the next task.
func TestReleaseInRecord(t *testing.T) {
	for _, e := range ssottest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			stores := openStores(t, e.URL(t), 1)
			b := Branches{Client: leasetest.New(), Store: stores[0]}
			rec := &activities.TaskRecord{Store: stores[0], Leases: b}
			in := activities.BranchLeaseInput{TaskID: "T-2026-001", Repo: "/src/app", Branch: "main", TTL: 10 * time.Minute}
			got, err := b.Acquire(ctx, in)
			if err != nil || got.Lease == nil || !got.Lease.Direct {
				t.Fatalf("acquire: %+v %v, want a direct lease", got, err)
			}
			held := in
			held.LeaseID, held.Version, held.Direct, held.AcquiredAt, held.ExpiresAt = got.Lease.LeaseID, got.Lease.Version,
				true, got.Lease.AcquiredAt, got.Lease.ExpiresAt
			held.ReleasedAt = time.Now().UTC()
			batch := activities.RecordInput{TaskID: in.TaskID, Rev: 9, Release: &held,
				Entries: []activities.RecordEntry{{ID: "E-1", Kind: ssot.KindEvent, Body: json.RawMessage(`{"n":1}`)}},
				Task:    json.RawMessage(`{"status":"done","repo":"/src/app"}`)}
			for try, want := range []int{1, 0} {
				out, err := rec.Record(ctx, batch)
				if err != nil || !out.Released || out.Written != want {
					t.Fatalf("try %d: %+v %v, want released with %d written", try, out, err, want)
				}
			}
			row, err := stores[0].Lease(ctx, held.LeaseID)
			if err != nil || row.State != lease.StateReleased || row.Reason != lease.ReasonTaskEnded || row.Version != held.Version+1 {
				t.Fatalf("the branch lease %+v %v, want released as the task ended", row, err)
			}
			if st, err := stores[0].Task(ctx, in.TaskID); err != nil || st.Status != "done" || st.Rev != 9 {
				t.Errorf("the task's state %+v %v, want done at rev 9", st, err)
			}
			in.TaskID = "T-2026-002"
			if next, err := b.Acquire(ctx, in); err != nil || next.Lease == nil || !next.Lease.Direct {
				t.Fatalf("the next task's acquire: %+v %v, want the branch", next, err)
			}
		})
	}
}
