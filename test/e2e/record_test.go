package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows"
)

// TestRecordHistories records the histories test/replay replays, over
// the files of the same names. It is skipped unless
// AMPFLOW_RECORD_HISTORIES=1; run it after a deliberate change of the
// workflow's shape (behind workflow.GetVersion), having first renamed the
// files that running tasks may still have, and commit both.
func TestRecordHistories(t *testing.T) {
	if os.Getenv("AMPFLOW_RECORD_HISTORIES") != "1" {
		t.Skip("set AMPFLOW_RECORD_HISTORIES=1 to record the replay histories")
	}
	p := startDev(t, t.TempDir(), "AMPFLOW_PROTOCOL_ACK_TIMEOUT_TASK_DISPATCH=2s", "AMPFLOW_ADMINS=recorder")
	// The worker's configuration above is the tasks' policy. The client
	// holds it too, as the API's does, so a low-risk task starts as
	// dispatched in visibility (Client.startStatus).
	tasks := dial(t, p)
	pol := workflows.NewPolicy(config.Default())
	tasks.Policy = &pol
	out := filepath.Join("..", "replay", "testdata")
	ctx := context.Background()

	scenarios := map[string]func(a *agent, id string){
		"approved": func(a *agent, id string) {
			d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
			a.ack(d)
			a.send(a.work(d, "hello.txt", "hello\n"))
			req := a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
			a.ack(req)
			a.send(a.verdict(req, amp.DecisionApproved))
		},
		"rejected_then_approved": func(a *agent, id string) {
			d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
			a.ack(d)
			a.send(a.work(d, "hello.txt", "hi\n"))
			req := a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
			a.ack(req)
			a.send(a.verdict(req, amp.DecisionRejected))
			waitStatus(t, a.tasks, id, task.StatusDispatched)
			d = a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
			a.ack(d)
			a.send(a.work(d, "hello.txt", "hello\n"))
			req = a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
			a.ack(req)
			a.send(a.verdict(req, amp.DecisionApproved))
		},
		"ack_timeout_redispatched": func(a *agent, id string) {
			var st task.State
			eventually(t, 30*time.Second, "ack_timeout decision", func() (bool, error) {
				var err error
				st, err = a.tasks.State(ctx, id)
				return err == nil && st.Pending != nil, err
			})
			if _, err := a.tasks.Decide(ctx, id, decision.Answer{DecisionID: st.Pending.ID, Digest: st.Pending.Digest, Option: task.OptRedispatch, By: "recorder", Channel: "cli"}); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, a.tasks, id, task.StatusDispatched)
			d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
			a.ack(d)
			a.send(a.work(d, "hello.txt", "hello\n"))
			req := a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
			a.ack(req)
			a.send(a.verdict(req, amp.DecisionApproved))
		},
		"cancelled": func(a *agent, id string) {
			d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
			a.ack(d)
			if _, err := a.tasks.Cancel(ctx, id, task.CancelInput{Reason: "superseded", By: "recorder"}); err != nil {
				t.Fatal(err)
			}
		},
	}
	n := 900
	for name, play := range scenarios {
		n++
		id := "T-2026-" + itoa(n)
		repo := gitRepo(t)
		if err := tasks.Start(ctx, task.Input{TaskID: id, Plan: lowRiskPlan(repo)}); err != nil {
			t.Fatal(err)
		}
		play(&agent{t: t, tasks: tasks, repo: repo}, id)
		eventually(t, 60*time.Second, id+" closed", func() (bool, error) {
			st, err := tasks.State(ctx, id)
			return err == nil && st.Status.Terminal(), err
		})
		writeHistory(t, tasks, id, filepath.Join(out, name+".json"))
	}
}

func itoa(n int) string {
	return string(rune('0'+n/100%10)) + string(rune('0'+n/10%10)) + string(rune('0'+n%10))
}

// writeHistory saves a workflow's history in the JSON form the replayer
// and `temporal workflow show -o json` use.
func writeHistory(t *testing.T, c *workflows.Client, id, path string) {
	t.Helper()
	it := c.Temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("reading history of %s: %v", id, err)
		}
		h.Events = append(h.Events, e)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s (%d events)", path, len(h.Events))
}
