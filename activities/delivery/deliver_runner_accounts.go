package delivery

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// AccountCounter counts runners' spend by account for the worker's
// metrics; a UsageCounter that is one also gets each run's account.
type AccountCounter interface {
	CountAccountSpend(runner string, role amp.Role, account string, usd float64)
}

// accountLimit is what a run's usage or rate limit did to its account:
// it rests until until; the delivery goes on with next, or, when every
// account rests, waits until allUntil.
type accountLimit struct {
	account  string
	until    time.Time
	why      string
	next     *config.Account
	allUntil time.Time
	allWhy   string
	note     string
}

// failedOver ends a run at its account's limit while another account is
// free: the delivery runs again at once on next.
type failedOver struct {
	next config.Account
	note string
}

func (e *failedOver) Error() string { return e.note }

var usageLimitRE = regexp.MustCompile(`(?i)usage limit|limit reached|quota|resource[ _]exhausted`)

// limitName says which limit a failure is: a usage limit (the plan's or
// the quota's, reset in hours) or a rate limit.
func limitName(f *runner.Failure) string {
	if usageLimitRE.MatchString(f.Message) {
		return "usage limit"
	}
	return "rate limit"
}

// takeAccount is the account a delivery's run starts on: the first of
// the role's accounts not resting; nil without accounts. When all rest,
// the delivery is rate limited until the earliest reset, and the task
// waits for it (workflows' rate_limit timer).
func (d *Delivery) takeAccount(ctx context.Context, a activities.AgentDelivery, m amp.Message) (*config.Account, error) {
	if len(a.Accounts) == 0 {
		return nil, nil
	}
	acc, until, why, ok := d.Accounts.Take(m.To, a.Accounts)
	if ok {
		return &acc, nil
	}
	summary := fmt.Sprintf("%s; the %s runner (%s) did not start on %s", allResting(m.To, len(a.Accounts), until, why), m.To, a.Runner, m.MsgID)
	d.noteTask(ctx, m, summary)
	f := activities.DeliveryFailure{Class: string(runner.FailureRateLimit), ResetAt: until, Summary: summary}
	return nil, temporal.NewNonRetryableApplicationError(summary, activities.ErrRateLimited, nil, f)
}

// limited rests the run's account when the run ended at a usage or rate
// limit, and chooses the account the delivery goes on with; nil when the
// run has no account or hit no limit.
func (st *runState) limited(out runner.Outcome) *accountLimit {
	if st.account == "" || out.Succeeded() || out.Failure == nil || out.Failure.Class != runner.FailureRateLimit {
		return nil
	}
	p, role := st.d.Accounts, st.m.To
	l := &accountLimit{account: st.account, why: limitName(out.Failure)}
	l.until = p.Rest(role, st.account, out.Failure.ResetAt, l.why)
	next, when, whyAll, ok := p.Take(role, st.a.Accounts)
	rests := fmt.Sprintf("account %s of the %s rests until %s (%s)", st.account, role, l.until.UTC().Format("15:04 MST"), l.why)
	if ok && next.Name != st.account {
		l.next = &next
		l.note = rests + "; the run goes on at once with account " + next.Name
	} else {
		if ok {
			// The only free account is this one: its reset has passed.
			when, whyAll = l.until, l.why
		}
		l.allUntil, l.allWhy = when, whyAll
		l.note = allResting(role, len(st.a.Accounts), when, whyAll) + "; delivering again then"
	}
	st.d.log().Info("runner account at its limit", "task_id", st.m.TaskID, "msg_id", st.m.MsgID, "role", role, "account", st.account,
		"until", l.until, "next", l.next != nil)
	st.d.noteTask(st.ctx, st.m, l.note)
	return l
}

// failedOver is the error that runs the delivery again on the next
// account, nil when the run's limit left none free.
func (st *runState) failedOver() error {
	if st.limit == nil || st.limit.next == nil {
		return nil
	}
	return &failedOver{next: *st.limit.next, note: st.limit.note}
}

// noteTask tells the task what happened to a run's account (a heartbeat
// note that its timeline keeps as an account entry).
func (d *Delivery) noteTask(ctx context.Context, m amp.Message, note string) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, note)
	}
	if d.Heartbeats == nil {
		return
	}
	if err := d.Heartbeats.Heartbeat(ctx, m.TaskID, task.HeartbeatInput{From: m.To, Note: note, Account: true}); err != nil {
		d.log().Debug("runner account heartbeat", "task_id", m.TaskID, "error", err)
	}
}

// maxFailovers bounds the accounts one delivery goes through, per
// account, so that resets that pass at once cannot loop.
const maxFailovers = 2
