package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

var optRaiseCap = decision.Option{ID: task.OptRaiseCap, Label: "Raise the cap"}

// onUsage counts the usage runners send, one run at a time.
func (t *taskRun) onUsage(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(workflow.GetSignalChannel(ctx, task.SignalUsage), func(c workflow.ReceiveChannel, _ bool) {
		var in task.UsageInput
		c.Receive(ctx, &in)
		t.usage(ctx, in)
	})
}

// usage charges one run to its role: once per key, and for a session
// that reports running totals only what it added since its last run.
func (t *taskRun) usage(ctx workflow.Context, in task.UsageInput) {
	if in.Key == "" || t.UsageKeys[in.Key] || (in.From != amp.RoleExecutor && in.From != amp.RoleReviewer) {
		return
	}
	if t.UsageKeys == nil {
		t.UsageKeys = map[string]bool{}
	}
	t.UsageKeys[in.Key] = true
	sk := string(in.From) + "/" + in.Runner + "/" + in.SessionID
	var last *task.UsageInput
	if prev, ok := t.Sessions[sk]; ok {
		last = &prev
	}
	usd, tok := task.Charge(in, last)
	if in.SessionTotal && in.SessionID != "" {
		if t.Sessions == nil {
			t.Sessions = map[string]task.UsageInput{}
		}
		t.Sessions[sk] = in
	}
	s := t.spend(in.From)
	s.CostUSD += usd
	s.Tokens.Input += tok.Input
	s.Tokens.Output += tok.Output
	s.Runs++
	t.addTimeline(ctx, task.TimelineEntry{Kind: "cost", MsgID: in.MsgID, From: string(in.From),
		Note: fmt.Sprintf("$%.4f, %d input and %d output tokens (%s)", usd, tok.Input, tok.Output, in.Runner)})
	t.snapshot()
}

// spend is a role's spend on the task, with the policy's cap when new.
func (t *taskRun) spend(role amp.Role) *task.Spend {
	for i := range t.Spend {
		if t.Spend[i].Role == role {
			return &t.Spend[i]
		}
	}
	t.Spend = append(t.Spend, task.Spend{Role: role, CapUSD: t.In.Policy.MaxCostUSD[role]})
	return &t.Spend[len(t.Spend)-1]
}

// sessionsOf lists role's sessions' last running totals, in a stable order.
func (t *taskRun) sessionsOf(role amp.Role) []task.UsageInput {
	var out []task.UsageInput
	for _, k := range workflow.DeterministicKeys(t.Sessions) {
		if u := t.Sessions[k]; u.From == role {
			out = append(out, u)
		}
	}
	return out
}

// budget fills a delivery's cost cap with what is left of the role's;
// false when nothing is left, and the delivery has failed for the admins
// to raise the cap or end the task.
func (t *taskRun) budget(m amp.Message, in *activities.DeliverInput) bool {
	in.Sessions = t.sessionsOf(m.To)
	if t.In.Policy.MaxCostUSD[m.To] <= 0 {
		return true
	}
	s := t.spend(m.To)
	left, ok := task.Remaining(s.CapUSD, s.CostUSD)
	if ok {
		in.MaxCostUSD = left
		return true
	}
	t.Failed = &deliveryFailed{MsgID: m.MsgID, To: m.To, Budget: true,
		Summary: fmt.Sprintf("the %s has spent $%.2f of its $%.2f cap on this task (agents.%s.max_cost_usd) and was not started", m.To, s.CostUSD, s.CapUSD, m.To)}
	return false
}

// raiseCap gives a role one more agents.<role>.max_cost_usd on the task,
// over what it has spent.
func (t *taskRun) raiseCap(ctx workflow.Context, role amp.Role) {
	s := t.spend(role)
	s.CapUSD = max(s.CapUSD, s.CostUSD) + t.In.Policy.MaxCostUSD[role]
	t.addTimeline(ctx, task.TimelineEntry{Kind: "cost", From: string(role), Note: fmt.Sprintf("cap raised to $%.2f", s.CapUSD)})
}

// rateLimitBackoff is how long a delivery waits after a rate limit that
// named no reset time: the nth wait in a row, capped at the last.
var rateLimitBackoff = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}

// maxRateLimitWait bounds a wait for a reset time the CLI announced.
const maxRateLimitWait = 24 * time.Hour

// rateLimitWait is how long the nth rate-limited delivery in a row waits:
// until the announced reset (and a few seconds more), else by backoff.
func rateLimitWait(now, resetAt time.Time, n int) time.Duration {
	if d := resetAt.Sub(now); !resetAt.IsZero() && d > 0 {
		return min(d+5*time.Second, maxRateLimitWait)
	}
	return rateLimitBackoff[min(n, len(rateLimitBackoff)-1)]
}
