package workflows

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// notReadyClient drops the first `drops` updates as the server does when
// the workflow task carrying one fails, and takes the next.
type notReadyClient struct {
	client.Client
	drops int
	ids   []string
}

func (c *notReadyClient) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.ids = append(c.ids, o.UpdateID)
	if len(c.ids) <= c.drops {
		return nil, serviceerror.NewWorkflowNotReady("Unable to perform workflow execution update due to unexpected workflow task failure.")
	}
	return doneHandle{}, nil
}

type doneHandle struct{ client.WorkflowUpdateHandle }

func (doneHandle) Get(context.Context, any) error { return nil }

// TestUpdateSentAgainWhenDropped: an update the server dropped with its
// failed workflow task is sent again under the same id, until the call's
// wait runs out.
func TestUpdateSentAgainWhenDropped(t *testing.T) {
	tc := &notReadyClient{drops: 2}
	c := &Client{Temporal: tc, Wait: 5 * time.Second}
	if err := c.update(context.Background(), "T-2026-001", "submit", "u-1", nil, nil); err != nil {
		t.Fatalf("update: %v", err)
	}
	if len(tc.ids) != 3 || tc.ids[0] != "u-1" || tc.ids[2] != "u-1" {
		t.Errorf("sent %v, want u-1 three times", tc.ids)
	}
	tc = &notReadyClient{drops: 1000}
	c = &Client{Temporal: tc, Wait: 300 * time.Millisecond}
	if err := c.update(context.Background(), "T-2026-001", "submit", "u-2", nil, nil); err == nil {
		t.Error("an update dropped every time succeeded")
	}
	if len(tc.ids) > 6 {
		t.Errorf("sent %d times within 300ms", len(tc.ids))
	}
}
