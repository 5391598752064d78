package gate

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	gateacts "github.com/ampflow/ampflow/activities/gate"
)

// Callback is the body posted to the agent's webhook.
type Callback struct {
	GateID     string    `json:"gate_id"`
	Status     Status    `json:"status"`
	RunID      string    `json:"run_id,omitempty"`
	AgentID    string    `json:"agent_id"`
	ResolvedAt time.Time `json:"resolved_at"`
	ResolvedBy string    `json:"resolved_by"`
	ContractID string    `json:"contract_id,omitempty"`
}

// callBack posts the resolution until it is delivered, refused for good
// or CallbackFor has passed, each attempt an activity the store records.
func (g *gateRun) callBack(ctx workflow.Context) {
	cb := Callback{GateID: g.Input.GateID, Status: g.Status, RunID: g.Input.RunID, AgentID: g.Input.AgentID,
		ResolvedAt: g.ResolvedAt.UTC(), ResolvedBy: g.ResolvedBy}
	if c := g.Input.Contract; c != nil {
		cb.ContractID = c.ID
	}
	body, _ := json.Marshal(cb)
	limit := g.Input.CallbackFor
	if limit <= 0 {
		limit = DefaultCallbackFor
	}
	deadline := workflow.Now(ctx).Add(limit)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		// One try per activity: the loop below is the retry, so that each
		// attempt is recorded with its number.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	wait := callbackFirstRetry
	for {
		g.Callback.Attempts++
		var res gateacts.GateCallbackResult
		err := workflow.ExecuteActivity(actx, gacts.GateCallback, gateacts.GateCallbackInput{
			GateID: g.Input.GateID, Attempt: g.Callback.Attempts, URL: g.Input.WebhookURL, Body: body,
			AgentID: g.Input.AgentID, RunID: g.Input.RunID,
		}).Get(ctx, &res)
		if err != nil {
			res.Error = err.Error()
		}
		g.Callback.LastAt, g.Callback.LastErr = workflow.Now(ctx), res.Error
		switch {
		case res.Delivered:
			g.Callback.Status = CallbackDelivered
		case res.Final || !workflow.Now(ctx).Add(wait).Before(deadline):
			g.Callback.Status = CallbackFailed
		}
		if g.Callback.Status != CallbackWaiting {
			break
		}
		if err := workflow.Sleep(ctx, wait); err != nil {
			g.Callback.Status = CallbackFailed
			break
		}
		wait = min(wait*2, callbackMaxRetry)
	}
	sctx := workflow.WithLocalActivityOptions(ctx, storeOptions())
	if err := workflow.ExecuteLocalActivity(sctx, gacts.GateCallbackState, gateacts.GateCallbackStateInput{
		GateID: g.Input.GateID, Callback: g.Callback.Status,
	}).Get(ctx, nil); err != nil {
		g.log.Error("recording the callback state", "err", err)
	}
	rb, _ := json.Marshal(g.Callback)
	g.queue = append(g.queue, effect{record: &activities.RecordEntry{ID: g.Input.GateID + "-callback", Kind: kindCallback, Body: rb, RecordedAt: workflow.Now(ctx)}})
}
