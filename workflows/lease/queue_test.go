package lease

import (
	"errors"
	"github.com/ampflow/ampflow/amp/lease"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

const grantSignal = "lease_granted"

// grants records the grants the workflow signals; gone lists waiters
// whose workflows no longer run.
type grants struct {
	mu   sync.Mutex
	to   []string
	gone map[string]bool
}

func (g *grants) mock(env *testsuite.TestWorkflowEnvironment) {
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", grantSignal, mock.Anything).Return(
		func(_, workflowID, _, _ string, arg any) error {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.gone[workflowID] {
				return errors.New("workflow execution already completed")
			}
			gr, _ := arg.(lease.Grant)
			g.to = append(g.to, workflowID+" "+gr.Lease.AgentID)
			return nil
		})
}

func waitReq(agent string) lease.WaitRequest {
	return lease.WaitRequest{AgentID: agent, TTLSeconds: 60, WorkflowID: "wf-" + agent, Signal: grantSignal}
}

func TestQueue(t *testing.T) {
	t.Run("HandedOnInOrder", func(t *testing.T) {
		env, rec := newEnv(t)
		g := &grants{}
		g.mock(env)
		var first lease.Lease
		update(env, 0, lease.UpdateWait, waitReq("T-1"), func(r lease.AcquireResult, err error) {
			if err != nil || r.Lease == nil {
				t.Fatalf("T-1 on a free key: %+v %v", r, err)
			}
			first = *r.Lease
		})
		update(env, time.Second, lease.UpdateWait, waitReq("T-2"), func(r lease.AcquireResult, err error) {
			if err != nil || r.Queued != 1 || r.Conflict == nil || r.Conflict.Holder != "T-1" {
				t.Errorf("T-2 behind T-1: %+v %v", r, err)
			}
		})
		update(env, 2*time.Second, lease.UpdateWait, waitReq("T-3"), func(r lease.AcquireResult, err error) {
			if err != nil || r.Queued != 2 {
				t.Errorf("T-3 behind T-2: %+v %v", r, err)
			}
		})
		update(env, 3*time.Second, lease.UpdateWait, waitReq("T-2"), func(r lease.AcquireResult, err error) {
			if err != nil || r.Queued != 1 {
				t.Errorf("T-2 asking again keeps its place: %+v %v", r, err)
			}
		})
		env.RegisterDelayedCallback(func() {
			update(env, 0, lease.UpdateRelease, signedRelease("repo:app:main", lease.ReleaseRequest{LeaseID: first.LeaseID, AgentID: "T-1"}), func(r lease.Lease, err error) {
				if err != nil {
					t.Errorf("T-1 release: %v", err)
				}
			})
		}, 10*time.Second)
		// T-2 leaves as its task ends: the key goes on to T-3 at once.
		update(env, 20*time.Second, lease.UpdateLeave, signed("repo:app:main", lease.LeaveRequest{AgentID: "T-2", Reason: lease.ReasonTaskEnded}), func(r lease.LeaveResult, err error) {
			if err != nil || r.Released == nil || r.Released.AgentID != "T-2" {
				t.Errorf("T-2 leave: %+v %v", r, err)
			}
		})
		// T-3's lease is not renewed: it is auto-released and the run ends.
		env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: "repo:app:main"})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		want := []string{"lock.acquired T-1", "lock.released T-1", "lock.acquired T-2", "lock.released T-2",
			"lock.acquired T-3", "lock.auto_released T-3"}
		if got := rec.events(); !equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
		if want := []string{"wf-T-2 T-2", "wf-T-3 T-3"}; !equal(g.to, want) {
			t.Errorf("grants %v, want %v", g.to, want)
		}
	})

	t.Run("GoneWaiterSkipped", func(t *testing.T) {
		env, rec := newEnv(t)
		g := &grants{gone: map[string]bool{"wf-T-2": true}}
		g.mock(env)
		update(env, 0, lease.UpdateWait, waitReq("T-1"), func(lease.AcquireResult, error) {})
		update(env, time.Second, lease.UpdateWait, waitReq("T-2"), func(lease.AcquireResult, error) {})
		update(env, 2*time.Second, lease.UpdateWait, waitReq("T-3"), func(lease.AcquireResult, error) {})
		env.RegisterDelayedCallback(func() {
			update(env, 0, lease.UpdateLeave, signed("repo:app:main", lease.LeaveRequest{AgentID: "T-1", Reason: lease.ReasonTaskEnded}), func(lease.LeaveResult, error) {})
		}, 5*time.Second)
		env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: "repo:app:main"})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		want := []string{"lock.acquired T-1", "lock.released T-1", "lock.acquired T-2", "lock.auto_released T-2",
			"lock.acquired T-3", "lock.auto_released T-3"}
		if got := rec.events(); !equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
		if want := []string{"wf-T-3 T-3"}; !equal(g.to, want) {
			t.Errorf("grants %v, want %v", g.to, want)
		}
	})

	t.Run("LeftQueueGetsNothing", func(t *testing.T) {
		env, rec := newEnv(t)
		g := &grants{}
		g.mock(env)
		var first lease.Lease
		update(env, 0, lease.UpdateWait, waitReq("T-1"), func(r lease.AcquireResult, err error) { first = *r.Lease })
		update(env, time.Second, lease.UpdateWait, waitReq("T-2"), func(lease.AcquireResult, error) {})
		update(env, 2*time.Second, lease.UpdateLeave, signed("repo:app:main", lease.LeaveRequest{AgentID: "T-2"}), func(r lease.LeaveResult, err error) {
			if err != nil || !r.Left || r.Released != nil {
				t.Errorf("T-2 leaving the queue: %+v %v", r, err)
			}
		})
		env.RegisterDelayedCallback(func() {
			update(env, 0, lease.UpdateRelease, signedRelease("repo:app:main", lease.ReleaseRequest{LeaseID: first.LeaseID, AgentID: "T-1"}), func(lease.Lease, error) {})
		}, 5*time.Second)
		env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: "repo:app:main"})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		if want := []string{"lock.acquired T-1", "lock.released T-1"}; !equal(rec.events(), want) {
			t.Errorf("events %v, want %v", rec.events(), want)
		}
		if len(g.to) != 0 {
			t.Errorf("grants %v, want none", g.to)
		}
	})
}
