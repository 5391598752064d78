package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestFaultSendWithoutWorker sends a task_result while `ampflow dev` is
// stopped: the client says clearly that nothing answers. Once the process
// is back, the same bytes are sent again and taken exactly once.
//
// The send goes through workflows.Client, not the HTTP API: `ampflow dev`
// serves the API from the same process as the worker and Temporal, so
// while it is down there is no API to answer at all, only a refused
// connection.
func TestFaultSendWithoutWorker(t *testing.T) {
	dataDir := t.TempDir()
	p := startDev(t, dataDir)
	api := newAPIClient(t, p.api, "")
	const id = "T-2026-831"
	a := &agent{t: t, repo: gitRepo(t)}
	api.startTask(id, lowRiskPlan(a.repo))
	d := api.outboxMsg(id, amp.TypeTaskDispatch)
	api.submit("/v1/acks", mustJSON(t, amp.NewAck(amp.RoleExecutor, d, time.Now())))
	api.waitFor(id, "in_progress", 60*time.Second, func(st task.State) bool { return st.Underlying() == task.StatusInProgress })
	res := a.work(d, "hello.txt", "hello\n")
	raw := mustJSON(t, res)

	tasks := dial(t, p)
	tasks.Wait = 5 * time.Second
	p.stop()
	start := time.Now()
	_, err := tasks.Submit(context.Background(), raw)
	t.Logf("send while stopped, after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if code := task.ErrorCode(err); code != task.CodeUnavailable {
		t.Fatalf("send while stopped: code %q (%v), want %q", code, err, task.CodeUnavailable)
	}
	if msg := err.Error(); !strings.Contains(msg, "worker") && !strings.Contains(msg, "Temporal") {
		t.Errorf("send while stopped: %q names neither the worker nor Temporal", msg)
	}
	if took := time.Since(start); took > 2*tasks.Wait+5*time.Second {
		t.Errorf("send while stopped took %s to fail, want about %s", took, tasks.Wait)
	}

	p.restart()
	api.reset()
	// The client made before the stop reconnects by itself; a sender
	// retries while it says unavailable.
	var accepted task.SubmitResult
	eventually(t, 60*time.Second, "the send accepted after the restart", func() (bool, error) {
		r, err := tasks.Submit(context.Background(), raw)
		if task.ErrorCode(err) == task.CodeUnavailable {
			return false, err
		}
		if err != nil {
			t.Fatalf("send after the restart: %v", err)
		}
		accepted = r
		return true, nil
	})
	if accepted.MsgID != res.MsgID || accepted.Duplicate {
		t.Errorf("send after the restart: %+v, want %s taken as new", accepted, res.MsgID)
	}
	if _, err := tasks.Submit(context.Background(), raw); err != nil {
		t.Errorf("the same send once more: %v", err)
	}

	req := api.outboxMsg(id, amp.TypeReviewRequest)
	api.submit("/v1/acks", mustJSON(t, amp.NewAck(amp.RoleReviewer, req, time.Now())))
	api.submit("/v1/messages", mustJSON(t, a.verdict(req, amp.DecisionApproved)))
	st := api.done(id, 60*time.Second)
	checkOnce(t, dataDir, st, lifecycleRecords(), res.MsgID)
}
