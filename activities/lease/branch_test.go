package lease

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/lease/leasetest"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/amp/task"
)

var _ Client = (*leasetest.Client)(nil)

func TestBranchLeaseActivities(t *testing.T) {
	f := leasetest.New()
	a := &activities.Activities{Leases: Branches{Client: f}}
	ctx := context.Background()
	in := activities.BranchLeaseInput{TaskID: "T-2026-001", Repo: "/src/app", Branch: "feature/x", TTL: 0}
	got, err := a.AcquireBranchLease(ctx, in)
	if err != nil || got.Lease == nil || got.Lease.ResourceKey != "repo:/src/app:feature/x" {
		t.Fatalf("first acquire: %+v %v", got, err)
	}
	w := f.Waits()[0]
	if w.WorkflowID != task.WorkflowID("T-2026-001") || w.Signal != task.SignalLeaseGranted || w.TTLSeconds != 1 {
		t.Errorf("wait request %+v: want the task's workflow, lease_granted, the TTL bounded to 1s", w)
	}
	in2 := in
	in2.TaskID = "T-2026-002"
	if got, err := a.AcquireBranchLease(ctx, in2); err != nil || got.Lease != nil || got.Holder != "T-2026-001" || got.Queued != 1 {
		t.Fatalf("second acquire: %+v %v, want queued behind T-2026-001", got, err)
	}
	if got, err := a.RenewBranchLease(ctx, activities.BranchLeaseInput{TaskID: "T-2026-001", LeaseID: "gone"}); err != nil || !strings.Contains(got.Lost, "not held") {
		t.Fatalf("renewing a lost lease: %+v %v, want Lost", got, err)
	}
	if _, err := a.ReleaseBranchLease(ctx, in2); err != nil || fmt.Sprint(f.Called("leave")) != "[repo:/src/app:feature/x T-2026-002 task_ended]" {
		t.Fatalf("release: %v %v", f.Called("leave"), err)
	}
	if _, err := (&activities.Activities{}).AcquireBranchLease(ctx, in); err == nil {
		t.Error("a worker without a lease client took a lease")
	}
}

func TestBranchKey(t *testing.T) {
	if k := activities.BranchKey("/src/app", "main"); k != "repo:/src/app:main" {
		t.Errorf("short key %q", k)
	}
	long := "/" + strings.Repeat("very-long-directory/", 12)
	k := activities.BranchKey(long, "feature/x")
	if len(k) > lease.MaxKeyLen || !strings.HasPrefix(k, "repo:sha256-") || !strings.HasSuffix(k, ":feature/x") || lease.CheckKey(k) != nil {
		t.Errorf("long key %q (%d bytes)", k, len(k))
	}
	if activities.BranchKey(long, "feature/x") != k || activities.BranchKey(long+"2", "feature/x") == k {
		t.Error("long keys are not stable and distinct")
	}
}

// The core's bound on an undigested branch key is the lease system's.
func TestBranchKeyBound(t *testing.T) {
	prefix := len(task.BranchLeaseKey("", "b"))
	exact := "/" + strings.Repeat("d", lease.MaxKeyLen-prefix-1)
	if k := activities.BranchKey(exact, "b"); len(k) != lease.MaxKeyLen || strings.HasPrefix(k, "repo:sha256-") {
		t.Errorf("a key of lease.MaxKeyLen bytes was changed: %q (%d bytes)", k, len(k))
	}
	if k := activities.BranchKey(exact+"d", "b"); !strings.HasPrefix(k, "repo:sha256-") {
		t.Errorf("a key past lease.MaxKeyLen was not digested: %d bytes", len(k))
	}
}
