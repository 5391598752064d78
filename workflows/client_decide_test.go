package workflows

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// updates is a Temporal client that keeps the updates it is sent and
// completes each at once.
type updates struct {
	client.Client
	sent []client.UpdateWorkflowOptions
}

func (u *updates) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	u.sent = append(u.sent, o)
	return doneUpdate{}, nil
}

type doneUpdate struct{}

func (doneUpdate) WorkflowID() string             { return "" }
func (doneUpdate) RunID() string                  { return "" }
func (doneUpdate) UpdateID() string               { return "" }
func (doneUpdate) Get(context.Context, any) error { return nil }

// TestDecideSigns: every answer Client.Decide sends, to a task or to any
// other subject, carries a signature of the decision key for that
// subject, as of now; without a key nothing is sent.
func TestDecideSigns(t *testing.T) {
	for _, subject := range []string{testTaskID, "gate-g1"} {
		t.Run(subject, func(t *testing.T) {
			tc := &updates{}
			c := &Client{Temporal: tc, TaskQueue: "ampflow", DecisionKey: testDecisionKey}
			a := decision.Answer{DecisionID: subject + "-d1", Digest: "abc", Option: decision.OptApprove, By: "alice", Channel: "slack"}
			if _, err := c.Decide(t.Context(), subject, a); err != nil {
				t.Fatal(err)
			}
			if len(tc.sent) != 1 || tc.sent[0].UpdateName != task.UpdateDecide {
				t.Fatalf("sent %+v, want one decide update", tc.sent)
			}
			got := tc.sent[0].Args[0].(decision.Answer)
			if err := decision.VerifyAnswer(testDecisionKey, subject, got, time.Now()); err != nil {
				t.Errorf("the answer sent does not verify: %v (%+v)", err, got)
			}
			got.Signature, got.At = "", time.Time{}
			if got != a {
				t.Errorf("sent %+v, want %+v signed", got, a)
			}
		})
	}
	t.Run("NoKey", func(t *testing.T) {
		tc := &updates{}
		_, err := (&Client{Temporal: tc}).Decide(t.Context(), testTaskID, decision.Answer{DecisionID: "T-2026-001-d1"})
		if task.ErrorCode(err) != task.CodeInternal || len(tc.sent) != 0 {
			t.Errorf("without a key: %v, %d sent; want an internal error and nothing sent", err, len(tc.sent))
		}
	})
}
