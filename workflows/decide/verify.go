package decide

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// Verify refuses, with forbidden, an answer no channel holding the
// decision key signed: an unsigned one (a raw Temporal update naming an
// admin), a forged or altered one, or a stale one. The check runs in a
// local activity on the worker, which holds the key, so the key never
// enters the history. An update's validator checks with ValidateSigned
// instead, which writes no marker.
func (e *Engine) Verify(ctx workflow.Context, a decision.Answer) error {
	return VerifySigned(ctx, e.subject, a)
}

// VerifySigned is Verify for a workflow without an engine (a lease): a
// signed to subject, its workflow id.
func VerifySigned(ctx workflow.Context, subject string, a decision.Answer) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 3},
	})
	var out decision.VerifyAnswerResult
	err := workflow.ExecuteLocalActivity(lctx, decision.ActivityVerifyAnswer, decision.VerifyAnswerInput{Subject: subject, Answer: a}).Get(ctx, &out)
	if err != nil {
		return refusal.New(task.CodeInternal, "verifying the answer to %s: %v", a.DecisionID, err)
	}
	if !out.OK {
		return forbidden(a, out.Reason)
	}
	return nil
}

// forbidden is the refusal of an answer the decision key did not sign.
func forbidden(a decision.Answer, reason string) error {
	return refusal.New(task.CodeForbidden, "answer to %s: %s: decisions are taken only through ampflow's API, CLI, chat or dashboard",
		a.DecisionID, reason)
}
