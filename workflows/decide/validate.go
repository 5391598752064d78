package decide

import (
	"context"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// Checker checks an answer's signature with the worker's decision key
// and its age with the worker's clock (activities.AnswerChecker), keeping
// what it refuses; it returns why an answer is refused, or nil.
type Checker interface {
	Check(ctx context.Context, subject string, a decision.Answer, now time.Time) error
}

// Interceptor hands c, the worker's answer checker, to the update
// validators of the workflows it runs, for ValidateSigned. Validators
// alone get it: they run where an update is taken and never on replay,
// so a check there needs no marker to replay the same; a handler, which
// replays, cannot reach it.
func Interceptor(c Checker) interceptor.WorkerInterceptor {
	return &checkerInterceptor{c: c}
}

type checkerKey struct{}

type checkerInterceptor struct {
	interceptor.WorkerInterceptorBase
	c Checker
}

func (i *checkerInterceptor) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	in := &checkerInbound{c: i.c}
	in.Next = next
	return in
}

type checkerInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	c Checker
}

func (i *checkerInbound) ValidateUpdate(ctx workflow.Context, in *interceptor.UpdateInput) error {
	return i.Next.ValidateUpdate(workflow.WithValue(ctx, checkerKey{}, i.c), in)
}

// refusalWait bounds keeping a refusal from a validator, which runs in
// the workflow task: the SDK fails a task that holds its coroutine for a
// second as deadlocked, and a lost entry is logged all the same.
const refusalWait = 500 * time.Millisecond

// ValidateSigned is VerifySigned for an update's validator: the same
// check and refusal, run with the checker Interceptor gave the worker, so
// an accepted update writes no marker and a refused one no history at
// all. A validator without a checker (a worker built without Interceptor)
// refuses every answer: nothing is taken unchecked.
func ValidateSigned(ctx workflow.Context, subject string, a decision.Answer) error {
	c, _ := ctx.Value(checkerKey{}).(Checker)
	if c == nil {
		return refusal.New(task.CodeInternal, "verifying the answer to %s: the worker has no decision key for update validators", a.DecisionID)
	}
	wctx, cancel := context.WithTimeout(context.Background(), refusalWait)
	defer cancel()
	if err := c.Check(wctx, subject, a, time.Now()); err != nil {
		return forbidden(a, err.Error())
	}
	return nil
}
