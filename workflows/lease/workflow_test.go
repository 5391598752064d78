package lease

import (
	"context"
	"errors"
	"github.com/ampflow/ampflow/amp/lease"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp/decision"
)

// recorder keeps the changes the workflow records, with the test clock.
type recorder struct {
	mu      sync.Mutex
	changes []lease.Change
}

func (r *recorder) changed(_ context.Context, c lease.Change) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c)
	return nil
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.changes {
		out = append(out, c.Event+" "+c.Lease.AgentID)
	}
	return out
}

func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *recorder) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	rec := &recorder{}
	env.RegisterActivityWithOptions(rec.changed, activity.RegisterOptions{Name: lease.ActivityChanged})
	env.RegisterActivity(&activities.Activities{DecisionKey: testDecisionKey})
	env.RegisterWorkflow(Workflow)
	return env, rec
}

// testDecisionKey is the decision key of the tests' worker.
var testDecisionKey = []byte(strings.Repeat("k", decision.MinKeySize))

// signed is req signed for key's workflow as Client signs a leave.
func signed(key string, req lease.LeaveRequest) lease.LeaveRequest {
	req.At = time.Now()
	req.Signature = decision.SignAnswer(testDecisionKey, lease.WorkflowID(key), must(req.SignedAs()))
	return req
}

// signedRelease is req signed for key's workflow as Client signs a
// release.
func signedRelease(key string, req lease.ReleaseRequest) lease.ReleaseRequest {
	req.At = time.Now()
	req.Signature = decision.SignAnswer(testDecisionKey, lease.WorkflowID(key), must(req.SignedAs()))
	return req
}

// update sends an update at a virtual time and hands its outcome to check.
func update[T any](env *testsuite.TestWorkflowEnvironment, at time.Duration, name string, arg any, check func(T, error)) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { var zero T; check(zero, err) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				out, _ := v.(T)
				check(out, err)
			},
		}, arg)
	}, at)
}

func errType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

func TestLease(t *testing.T) {
	t.Run("ConflictThenRelease", func(t *testing.T) {
		env, rec := newEnv(t)
		start := env.Now()
		var first lease.Lease
		update(env, 0, lease.UpdateAcquire, lease.AcquireRequest{AgentID: "alice", TTLSeconds: 60}, func(r lease.AcquireResult, err error) {
			if err != nil || r.Lease == nil {
				t.Fatalf("alice acquire: %+v %v", r, err)
			}
			first = *r.Lease
		})
		update(env, 2*time.Second, lease.UpdateAcquire, lease.AcquireRequest{AgentID: "bob", TTLSeconds: 60}, func(r lease.AcquireResult, err error) {
			if err != nil || r.Conflict == nil || r.Conflict.Holder != "alice" || r.Conflict.RetryAfterMS != 58000 {
				t.Errorf("bob acquire while alice holds: %+v %v", r.Conflict, err)
			}
		})
		env.RegisterDelayedCallback(func() {
			update(env, 0, lease.UpdateRelease, lease.ReleaseRequest{LeaseID: first.LeaseID, AgentID: "bob"}, func(r lease.Lease, err error) {
				if errType(err) != lease.ErrNotHolder {
					t.Errorf("bob releasing alice's lease: %v, want %s", err, lease.ErrNotHolder)
				}
			})
			update(env, 0, lease.UpdateRelease, lease.ReleaseRequest{LeaseID: "nope", AgentID: "x", Admin: true}, func(r lease.Lease, err error) {
				if errType(err) != lease.ErrNotHeld {
					t.Errorf("release of an unknown lease: %v", err)
				}
			})
			update(env, time.Second, lease.UpdateRelease, signedRelease("repo:app:main", lease.ReleaseRequest{LeaseID: first.LeaseID, AgentID: "alice"}), func(r lease.Lease, err error) {
				if err != nil || r.State != lease.StateReleased || r.Reason != lease.ReasonReleased {
					t.Errorf("alice release: %+v %v", r, err)
				}
			})
		}, 3*time.Second)
		env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: "repo:app:main"})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		want := []string{"lock.acquired alice", "lock.released alice"}
		if got := rec.events(); !equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
		if key, err := lease.KeyOf(first.LeaseID); err != nil || key != "repo:app:main" {
			t.Fatalf("lease.KeyOf(%s) = %q %v", first.LeaseID, key, err)
		}
		// The run ends with the release: the next acquire starts a new one.
		if got := env.Now().Sub(start); got != 4*time.Second {
			t.Fatalf("workflow ended after %s, want 4s", got)
		}
		var res lease.Result
		if err := env.GetWorkflowResult(&res); err != nil || res.Last == nil || res.Last.LeaseID != first.LeaseID {
			t.Fatalf("result %+v %v", res, err)
		}
	})

	t.Run("ExpiresOnTheSecond", func(t *testing.T) {
		env, rec := newEnv(t)
		start := env.Now()
		var id string
		update(env, 0, lease.UpdateAcquire, lease.AcquireRequest{AgentID: "alice", TTLSeconds: 30}, func(r lease.AcquireResult, err error) {
			if err != nil || r.Lease == nil {
				t.Fatalf("acquire: %+v %v", r, err)
			}
			id = r.Lease.LeaseID
		})
		env.RegisterDelayedCallback(func() {
			update(env, 0, lease.UpdateRenew, lease.RenewRequest{LeaseID: id, AgentID: "alice", TTLSeconds: 45}, func(r lease.Lease, err error) {
				if err != nil || r.ExpiresAt.Sub(start) != 65*time.Second {
					t.Errorf("renew at 20s with ttl 45: %+v %v", r, err)
				}
			})
			update(env, 0, lease.UpdateRenew, lease.RenewRequest{LeaseID: id, AgentID: "bob", TTLSeconds: 45}, func(r lease.Lease, err error) {
				if errType(err) != lease.ErrNotHolder {
					t.Errorf("renew by bob: %v", err)
				}
			})
			update(env, 0, lease.UpdateRenew, lease.RenewRequest{LeaseID: id, AgentID: "alice", TTLSeconds: 0}, func(r lease.Lease, err error) {
				if errType(err) != lease.ErrInvalid {
					t.Errorf("renew with ttl 0: %v", err)
				}
			})
		}, 20*time.Second)
		env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: "task:T-1"})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		last := rec.changes[len(rec.changes)-1]
		if last.Event != lease.EventAutoReleased || !last.Notify || last.Lease.State != lease.StateExpired ||
			last.Lease.ReleasedAt.Sub(start) != 65*time.Second || last.Lease.LastHeartbeat.Sub(start) != 20*time.Second {
			t.Fatalf("last change %+v, want an auto-release at 65s of the heartbeat at 20s", last)
		}
	})

	t.Run("AgentInactive", func(t *testing.T) {
		env, rec := newEnv(t)
		var id string
		update(env, 0, lease.UpdateAcquire, lease.AcquireRequest{AgentID: "alice", TTLSeconds: 300}, func(r lease.AcquireResult, err error) {
			id = r.Lease.LeaseID
		})
		env.RegisterDelayedCallback(func() {
			update(env, 0, lease.UpdateRelease, signedRelease("task:T-2", lease.ReleaseRequest{LeaseID: id, AgentID: "alice", Reason: lease.ReasonAgentInactive}), func(r lease.Lease, err error) {
				if err != nil || r.Reason != lease.ReasonAgentInactive {
					t.Errorf("release on inactive: %+v %v", r, err)
				}
			})
		}, time.Second)
		env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: "task:T-2"})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		if got, want := rec.events(), []string{"lock.acquired alice", "lock.auto_released alice"}; !equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
		if !rec.changes[1].Notify {
			t.Fatal("the holder is not told of a release on inactive")
		}
	})

	t.Run("SameAgentRenews", func(t *testing.T) {
		env, rec := newEnv(t)
		var ids []string
		for _, at := range []time.Duration{0, 5 * time.Second} {
			update(env, at, lease.UpdateAcquire, lease.AcquireRequest{AgentID: "alice", TTLSeconds: 10}, func(r lease.AcquireResult, err error) {
				if err != nil || r.Lease == nil {
					t.Fatalf("acquire: %+v %v", r, err)
				}
				ids = append(ids, r.Lease.LeaseID)
			})
		}
		env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: "k"})
		if ids[0] != ids[1] {
			t.Fatalf("the holder asking again got a new lease: %v", ids)
		}
		if got, want := rec.events(), []string{"lock.acquired alice", "lock.renewed alice", "lock.auto_released alice"}; !equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}

func TestLeaseID(t *testing.T) {
	for _, key := range []string{"repo:app:feature/x", "task:T-1", "ключ"} {
		id := lease.NewLeaseID(key, "00ff")
		if got, err := lease.KeyOf(id); err != nil || got != key {
			t.Errorf("lease.KeyOf(lease.NewLeaseID(%q)) = %q, %v", key, got, err)
		}
	}
	for _, bad := range []string{"", "x", "L1.***", "L1."} {
		if _, err := lease.KeyOf(bad); err == nil {
			t.Errorf("lease.KeyOf(%q) accepted", bad)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAdminReleaseSigned: a release as admin overrides the holder only
// signed with the decision key, as Client signs it; a raw Temporal update
// naming an admin is refused and the lease stays held.
func TestAdminReleaseSigned(t *testing.T) {
	key := testDecisionKey
	env, rec := newEnv(t)
	const resource = "repo:app:main"
	var id string
	update(env, 0, lease.UpdateAcquire, lease.AcquireRequest{AgentID: "alice", TTLSeconds: 600}, func(r lease.AcquireResult, err error) {
		if err != nil || r.Lease == nil {
			t.Fatalf("alice acquire: %+v %v", r, err)
		}
		id = r.Lease.LeaseID
	})
	env.RegisterDelayedCallback(func() {
		update(env, 0, lease.UpdateRelease, lease.ReleaseRequest{LeaseID: id, AgentID: "ops", Admin: true}, func(r lease.Lease, err error) {
			if errType(err) != lease.ErrNotHolder {
				t.Errorf("an unsigned admin release: %+v %v, want %s", r, err, lease.ErrNotHolder)
			}
		})
		forged := lease.ReleaseRequest{LeaseID: id, AgentID: "ops", Admin: true, Signed: decision.Signed{At: env.Now()}}
		forged.Signature = decision.SignAnswer(key, lease.WorkflowID(resource), must(forged.SignedAs()))
		forged.AgentID = "mallory"
		update(env, time.Second, lease.UpdateRelease, forged, func(r lease.Lease, err error) {
			if errType(err) != lease.ErrNotHolder {
				t.Errorf("an altered admin release: %+v %v, want %s", r, err, lease.ErrNotHolder)
			}
		})
		signed := lease.ReleaseRequest{LeaseID: id, AgentID: "ops", Admin: true, Signed: decision.Signed{At: env.Now().Add(2 * time.Second)}}
		signed.Signature = decision.SignAnswer(key, lease.WorkflowID(resource), must(signed.SignedAs()))
		update(env, 2*time.Second, lease.UpdateRelease, signed, func(r lease.Lease, err error) {
			if err != nil || r.State != lease.StateReleased || r.Reason != lease.ReasonAdmin {
				t.Errorf("a signed admin release: %+v %v", r, err)
			}
		})
	}, time.Second)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: lease.WorkflowID(resource)})
	env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: resource})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.events(), []string{"lock.acquired alice", "lock.released alice"}; !equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
