package delivery

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// UsageRecorder passes what a runner's run cost to its task.
type UsageRecorder interface {
	RecordUsage(ctx context.Context, taskID string, in task.UsageInput) error
}

// UsageCounter counts runners' spend for the worker's metrics.
type UsageCounter interface {
	CountRunnerUsage(runner string, role amp.Role, inputTokens, outputTokens int64, usd float64)
}

// sessionTotals indexes a role's sessions' last running totals by id.
func sessionTotals(list []task.UsageInput) map[string]task.UsageInput {
	m := map[string]task.UsageInput{}
	for _, u := range list {
		if u.SessionID != "" {
			m[u.SessionID] = u
		}
	}
	return m
}

// runCap is a run's Spec.MaxCostUSD: what is left of the task's cap, and
// for a session that reports running totals (Codex) the total it had
// already, which its figures include; 0 is no cap.
func runCap(left float64, prior task.UsageInput) float64 {
	if left <= 0 {
		return 0
	}
	if prior.SessionTotal {
		return left + prior.CostUSD
	}
	return left
}

// report sends the task a run's usage, keyed so that a signal sent again
// counts once, and counts it in the worker's metrics.
func (st *runState) report(out runner.Outcome) {
	st.runs++
	u := out.Usage
	if u.InputTokens == 0 && u.OutputTokens == 0 && u.CostUSD == 0 {
		return
	}
	in := task.UsageInput{Key: st.key(), From: st.m.To, MsgID: st.m.MsgID, Runner: st.a.Runner, SessionID: out.SessionID,
		SessionTotal: u.SessionTotal, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: u.CostUSD}
	if in.SessionID == "" {
		in.SessionID = st.session
	}
	if !u.CostReported {
		in.CostUSD = st.d.Pricing.Price(st.a.Model, u.InputTokens, u.OutputTokens)
	}
	var last *task.UsageInput
	if prev, ok := st.totals[in.SessionID]; ok && in.SessionTotal {
		last = &prev
	}
	usd, tok := task.Charge(in, last)
	if in.SessionTotal {
		st.totals[in.SessionID] = in
	}
	if st.d.Metrics != nil {
		st.d.Metrics.CountRunnerUsage(st.a.Runner, st.m.To, tok.Input, tok.Output, usd)
		if c, ok := st.d.Metrics.(AccountCounter); ok && st.account != "" {
			c.CountAccountSpend(st.a.Runner, st.m.To, st.account, usd)
		}
	}
	st.d.Accounts.Spend(st.m.To, st.account, usd)
	st.d.Budgets.charge(st.ctx, st.d.log(), st.a, st.m, st.repo, in, tok.Input, tok.Output, usd)
	if st.d.Usage == nil {
		return
	}
	// The usage reaches the task before the reply, which may end it.
	if err := st.d.Usage.RecordUsage(st.ctx, st.m.TaskID, in); err != nil {
		st.d.log().Warn("runner usage not recorded", "task_id", st.m.TaskID, "msg_id", st.m.MsgID, "key", in.Key, "error", err)
	}
}

// key names one run of a delivery: the same in a signal sent again, new
// in an activity's retry and in a later delivery of the same message.
func (st *runState) key() string {
	if activity.IsActivity(st.ctx) {
		info := activity.GetInfo(st.ctx)
		return fmt.Sprintf("%s/%s/%s/%d/%d", st.m.MsgID, info.WorkflowExecution.RunID, info.ActivityID, info.Attempt, st.runs)
	}
	return fmt.Sprintf("%s/%d", st.m.MsgID, st.runs)
}

// keyEnvs are the API key variables each runner reads by default.
var keyEnvs = map[string]string{
	runner.Claude:   "ANTHROPIC_API_KEY",
	runner.Codex:    "OPENAI_API_KEY",
	runner.Gemini:   "GEMINI_API_KEY",
	runner.OpenCode: "the provider's key variable in OpenCode's configuration",
}

// keyEnv names where a runner's refused key comes from: the key-like
// names in agents.<role>.env, else the runner's default variable.
func keyEnv(a activities.AgentDelivery) string {
	var names []string
	for _, e := range a.Env {
		name, _, _ := strings.Cut(e, "=")
		if u := strings.ToUpper(name); strings.HasSuffix(u, "_KEY") || strings.HasSuffix(u, "_TOKEN") {
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		return strings.Join(names, " or ")
	}
	if k, ok := keyEnvs[a.Runner]; ok {
		return k
	}
	return "its API key variable"
}

// unsetKeys says which key variables agents.*.env passes from the
// worker's environment that lookup finds unset: "; OPENAI_API_KEY is
// unset in the worker's environment", or "".
func unsetKeys(a activities.AgentDelivery, lookup func(string) (string, bool)) string {
	var names []string
	for _, e := range a.Env {
		if strings.Contains(e, "=") {
			continue
		}
		if u := strings.ToUpper(e); !strings.HasSuffix(u, "_KEY") && !strings.HasSuffix(u, "_TOKEN") {
			continue
		}
		if _, ok := lookup(e); !ok {
			names = append(names, e)
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return "; " + names[0] + " is unset in the worker's environment"
	}
	return "; " + strings.Join(names, " and ") + " are unset in the worker's environment"
}

// runFailed keeps what a failed run left (committed to a salvage branch)
// and fails the delivery by class: a rate limit for the task to wait out
// and deliver again, anything else for the admins at once (a refused key
// names the variable to fix; a run stopped at the cost cap asks for a
// raise).
func (d *Delivery) runFailed(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput, dir string, out runner.Outcome) error {
	return d.runFailedOn(ctx, a, in, dir, out, nil)
}

// runFailedOn is runFailed for a run on one of the runner's accounts:
// limit, set, says that a rate limit left every account resting.
func (d *Delivery) runFailedOn(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput, dir string, out runner.Outcome, limit *accountLimit) error {
	m := in.Message
	if out.Failure != nil && out.Failure.Class == runner.FailureNetwork && out.Reason != runner.ReasonMaxCost {
		// Nobody's fault and likely gone on the next try: the activity's
		// policy runs it again, resuming the session in the checkout as
		// the run left it.
		summary := fmt.Sprintf("the %s runner (%s) lost its model API's connection on %s: %s; running it again",
			m.To, a.Runner, m.MsgID, clip(out.Failure.Message, 300))
		return temporal.NewApplicationError(summary, activities.ErrModelConnection,
			activities.DeliveryFailure{Class: string(runner.FailureNetwork), Summary: summary, Stderr: d.stderrTail(out.Stderr)})
	}
	salvaged := ""
	if m.To == amp.RoleExecutor {
		ref, c, _, err := runner.SalvageLeftover(ctx, dir, m.TaskID, "a failed "+a.Runner+" run")
		kept := []string{in.Branch}
		if err == nil && c != "" {
			kept = append(kept, ref)
		}
		if ferr := runner.FetchBack(ctx, in.Repo, dir, nonEmpty(kept)...); ferr == nil && err == nil && c != "" {
			salvaged = fmt.Sprintf("; its uncommitted work is on branch %s (%s)", ref, activities.ShortHash(c))
		} else if err != nil {
			salvaged = "; its uncommitted work was not salvaged: " + err.Error()
		}
	}
	why := runnerReason(out)
	stderr := d.stderrTail(out.Stderr)
	f := activities.DeliveryFailure{Stderr: stderr}
	switch {
	case out.Reason == runner.ReasonMaxCost || (out.ResultError && strings.Contains(out.Text, "max_budget")):
		f.Class = activities.FailureMaxCost
		f.Summary = fmt.Sprintf("the %s runner (%s) reached the task's cost cap ($%.2f spent by this run) on %s and was stopped%s",
			m.To, a.Runner, out.Usage.CostUSD, m.MsgID, salvaged)
	case out.Failure != nil && out.Failure.Class == runner.FailureRateLimit:
		f.Class, f.ResetAt = string(runner.FailureRateLimit), out.Failure.ResetAt
		f.Summary = fmt.Sprintf("the %s runner (%s) hit a rate limit on %s: %s%s", m.To, a.Runner, m.MsgID, why, salvaged)
		if limit != nil {
			f.ResetAt = limit.allUntil
			f.Summary = fmt.Sprintf("%s; the %s runner (%s) hit a %s on %s with account %s: %s%s",
				allResting(m.To, len(a.Accounts), limit.allUntil, limit.allWhy), m.To, a.Runner, limit.why, m.MsgID, limit.account, why, salvaged)
		}
		return temporal.NewNonRetryableApplicationError(f.Summary, activities.ErrRateLimited, nil, f)
	case out.Failure != nil && out.Failure.Class == runner.FailureAuth:
		f.Class = string(runner.FailureAuth)
		f.Summary = fmt.Sprintf("the %s runner (%s) was refused by its API on %s: %s; fix the key in %s (agents.%s.env) and send it again%s%s",
			m.To, a.Runner, m.MsgID, clip(out.Failure.Message, 300), keyEnv(a), m.To, unsetKeys(a, os.LookupEnv), salvaged)
	default:
		if out.Failure != nil {
			f.Class = string(out.Failure.Class)
		}
		f.Summary = fmt.Sprintf("the %s runner (%s) %s on %s%s", m.To, a.Runner, why, m.MsgID, salvaged)
	}
	return temporal.NewNonRetryableApplicationError(f.Summary, activities.ErrDelivery, nil, f)
}

// runnerReason says in words why a run did not succeed.
func runnerReason(out runner.Outcome) string {
	switch out.Reason {
	case runner.ReasonFirstEvent:
		return "printed no event within its first-event limit and was stopped"
	case runner.ReasonIdle:
		return "printed no event for agents.*.idle_timeout and was stopped as hung"
	case runner.ReasonExitAfterResult:
		return "did not exit after its final result and was stopped"
	case runner.ReasonTimeout:
		return "ran past agents.*.timeout and was stopped"
	case runner.ReasonMaxCost:
		return fmt.Sprintf("passed agents.*.max_cost_usd ($%.2f spent) and was stopped", out.Usage.CostUSD)
	case runner.ReasonCanceled:
		return "was canceled"
	}
	if out.Failure != nil {
		return fmt.Sprintf("failed (%s): %s", out.Failure.Class, clip(out.Failure.Message, 300))
	}
	if out.ResultError {
		return "reported an error: " + clip(out.Text, 300)
	}
	if !out.Result {
		return fmt.Sprintf("exited with status %d without a final result", out.ExitCode)
	}
	return fmt.Sprintf("exited with status %d", out.ExitCode)
}

// nonEmpty is list without its empty strings.
func nonEmpty(list []string) []string {
	out := list[:0:0]
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
