package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// waitFor waits until cond holds, the deadline passes (a zero deadline
// never does), or the task is interrupted. It reports a timeout. The
// deadline's timer is shared with the run's other waits (deadlines).
func (t *taskRun) waitFor(ctx workflow.Context, deadline time.Time, cond func() bool) (bool, error) {
	full := func() bool { return cond() || t.mustGiveWay(ctx) }
	if deadline.IsZero() {
		return false, workflow.Await(ctx, full)
	}
	return t.deadlines.await(ctx, deadline, full)
}

// mustGiveWay reports whether the run loop must take over: an
// interruption, or Temporal suggests continuing as new.
func (t *taskRun) mustGiveWay(ctx workflow.Context) bool {
	return t.interrupted() || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

// runUntilGiveWay runs an activity that may take long, cancelling it
// when the task must give way (a cancel, an agent's critical escalation, a
// continue-as-new); it then reports gaveWay, and the phase runs again.
//
// The run waits on both in its own coroutine: a watcher coroutine beside
// it would be one more for the workflow's dispatcher to wake on every
// pass while the activity runs.
func (t *taskRun) runUntilGiveWay(ctx workflow.Context, start func(workflow.Context) workflow.Future, out any) (gaveWay bool, err error) {
	actx, cancel := workflow.WithCancel(ctx)
	f := start(actx)
	if werr := workflow.Await(ctx, func() bool { return f.IsReady() || t.mustGiveWay(ctx) }); werr == nil && !f.IsReady() {
		cancel()
	}
	err = f.Get(ctx, out)
	if err != nil && t.mustGiveWay(ctx) {
		return true, nil
	}
	return false, err
}

// ackWait is what the ACK wait of one sent message needs to know.
type ackWait struct {
	role   amp.Role
	msgID  string
	typ    amp.Type
	again  decision.Option // how to send it again
	reply  func() bool     // the agent's reply arrived (an implicit ACK)
	policy string          // what the admins are told to do
}

// awaitAckOf waits until the agent ACKs or replies; on the ACK deadline
// the admins decide, and an ACK that comes late still counts. It returns
// the phase to go to, or "" when the agent has ACKed.
func (t *taskRun) awaitAckOf(ctx workflow.Context, w ackWait, here phase) (phase, error) {
	kinds := []decision.Kind{task.KindAckTimeout, task.KindDeliveryFailed}
	for {
		if w.reply() || t.acked(w.msgID) {
			t.supersede(ctx, "the "+string(w.role)+" answered", kinds...)
			t.clearFailed()
			t.Recovered = ""
			t.Deadline = time.Time{}
			t.LastActive = workflow.Now(ctx)
			return "", nil
		}
		if t.mustGiveWay(ctx) {
			return here, nil
		}
		// An agent that restarted after a crash lost the message: send
		// it again now rather than wait out the ACK deadline.
		if t.Recovered == w.role {
			t.Recovered = ""
			t.supersede(ctx, "the "+string(w.role)+" recovered from a crash", kinds...)
			t.clearFailed()
			t.Deadline = time.Time{}
			if w.role == amp.RoleReviewer {
				return phaseReview, nil
			}
			return phaseDispatch, nil
		}
		if o := t.decisions.Take(kinds...); o != nil {
			t.clearFailed()
			switch o.Option {
			case task.OptWait:
				t.Deadline = workflow.Now(ctx).Add(t.In.Policy.AckTimeout(w.typ))
				continue
			case task.OptRedispatch, task.OptReviewAgain, task.OptRaiseCap:
				if o.Option == task.OptRaiseCap {
					t.raiseCap(ctx, w.role)
				}
				t.Deadline = time.Time{}
				if w.role == amp.RoleExecutor {
					return phaseDispatch, nil
				}
				return phaseReview, nil
			}
			t.Deadline = time.Time{}
			return t.terminatedBy(o), nil
		}
		if f := t.failedToRaise(w.msgID); f != nil {
			if err := t.raiseFailed(ctx, f, w.again); err != nil {
				return here, err
			}
			continue
		}
		timedOut, err := t.waitFor(ctx, t.Deadline, func() bool {
			return w.reply() || t.acked(w.msgID) || t.decisions.Answered(kinds...) || t.failedToRaise(w.msgID) != nil || t.Recovered == w.role
		})
		if err != nil {
			return here, err
		}
		// A delivery waiting out a rate limit has not failed to ACK.
		if timedOut && t.PausedUntil.After(workflow.Now(ctx)) {
			t.Deadline = t.PausedUntil.Add(t.In.Policy.AckTimeout(w.typ))
			continue
		}
		if timedOut {
			t.Deadline = time.Time{}
			if t.failedToRaise(w.msgID) == nil {
				desc := fmt.Sprintf("The %s did not ACK %s within %s.", w.role, w.msgID, task.FormatDuration(t.In.Policy.AckTimeout(w.typ)))
				err := t.raiseOnce(ctx, question{kind: task.KindAckTimeout, prompt: desc + " " + w.policy,
					options: []decision.Option{w.again, optWait, optTerminate}, unless: kinds,
					escalation: func() *amp.Message {
						return t.escalate(ctx, amp.EscAckTimeout, amp.SeverityWarning, amp.RoleSystem, desc, []string{w.msgID},
							"Send it again", "Keep waiting for the "+string(w.role), "Terminate the task")
					},
					withdraw: "superseded by an ACK timeout"})
				if err != nil {
					return here, err
				}
			}
		}
	}
}

// awaitReply waits for an agent's reply, raising a heartbeat_timeout on
// silence. It returns "" once the reply is in.
func (t *taskRun) awaitReply(ctx workflow.Context, role amp.Role, again decision.Option, replied func() bool, here phase) (phase, error) {
	kinds := []decision.Kind{task.KindHeartbeatTimeout, task.KindDeliveryFailed}
	ref := t.DispatchID
	if role == amp.RoleReviewer {
		ref = t.RequestID
	}
	for {
		if replied() {
			t.supersede(ctx, "the "+string(role)+" replied", kinds...)
			t.clearFailed()
			t.Recovered = ""
			return "", nil
		}
		if t.mustGiveWay(ctx) {
			return here, nil
		}
		// An agent that restarted after a crash lost the work: send again
		// now rather than wait out the heartbeat timeout.
		if t.Recovered == role {
			t.Recovered = ""
			t.supersede(ctx, "the "+string(role)+" recovered from a crash", kinds...)
			t.clearFailed()
			if role == amp.RoleReviewer {
				return phaseReview, nil
			}
			return phaseDispatch, nil
		}
		if o := t.decisions.Take(kinds...); o != nil {
			t.clearFailed()
			switch o.Option {
			case task.OptWait:
				t.LastActive = workflow.Now(ctx)
				continue
			case task.OptRedispatch:
				return phaseDispatch, nil
			case task.OptReviewAgain:
				return phaseReview, nil
			case task.OptRaiseCap:
				t.raiseCap(ctx, role)
				if role == amp.RoleReviewer {
					return phaseReview, nil
				}
				return phaseDispatch, nil
			}
			return t.terminatedBy(o), nil
		}
		if f := t.failedToRaise(ref); f != nil {
			if err := t.raiseFailed(ctx, f, again); err != nil {
				return here, err
			}
			continue
		}
		k, asked := t.decisions.Asking(kinds...)
		var deadline time.Time
		if !asked {
			// A delivery waiting out a rate limit is not silence.
			from := t.LastActive
			if t.PausedUntil.After(from) {
				from = t.PausedUntil
			}
			deadline = from.Add(t.In.Policy.HeartbeatTimeout)
		}
		last, paused := t.LastActive, t.PausedUntil
		timedOut, err := t.waitFor(ctx, deadline, func() bool {
			return replied() || t.decisions.Answered(kinds...) || t.LastActive != last || !t.PausedUntil.Equal(paused) ||
				t.failedToRaise(ref) != nil || t.Recovered == role
		})
		if err != nil {
			return here, err
		}
		if t.failedToRaise(ref) != nil {
			continue
		}
		if !t.PausedUntil.Equal(paused) {
			continue
		}
		// A heartbeat answers the silence, not the failed delivery.
		if asked && k == task.KindHeartbeatTimeout && t.LastActive != last {
			t.supersede(ctx, "the "+string(role)+" showed life again", kinds...)
			continue
		}
		// Only an unasked silence has a deadline, so only it times out.
		if timedOut {
			desc := fmt.Sprintf("The %s has been silent for %s (no message or heartbeat).", role, task.FormatDuration(t.In.Policy.HeartbeatTimeout))
			err := t.raiseOnce(ctx, question{kind: task.KindHeartbeatTimeout, prompt: desc + " Send again, keep waiting or terminate?",
				options: []decision.Option{again, optWait, optTerminate}, unless: kinds,
				escalation: func() *amp.Message {
					return t.escalate(ctx, amp.EscHeartbeatTimeout, amp.SeverityWarning, amp.RoleSystem, desc, []string{ref},
						"Send the work again", "Keep waiting", "Terminate the task")
				},
				withdraw: "superseded by a heartbeat timeout"})
			if err != nil {
				return here, err
			}
		}
	}
}

// failedToRaise returns the failed delivery of msgID the admins have not
// yet been asked about, or nil.
func (t *taskRun) failedToRaise(msgID string) *deliveryFailed {
	if f := t.Failed; f != nil && f.MsgID == msgID && !f.Raised {
		return f
	}
	return nil
}

// raiseFailed escalates a failed delivery and asks the admins to send it
// again, keep waiting (the agent may still answer through the API) or
// terminate; the agent's stderr goes with the question.
func (t *taskRun) raiseFailed(ctx workflow.Context, f *deliveryFailed, again decision.Option) error {
	f.Raised = true
	t.Deadline = time.Time{}
	t.LastError = f.line()
	desc := fmt.Sprintf("The delivery of %s to the %s failed: %s.", f.MsgID, f.To, f.Summary)
	if f.Budget {
		s := t.spend(f.To)
		by := t.In.Policy.MaxCostUSD[f.To]
		return t.raise(ctx, question{kind: task.KindDeliveryFailed,
			prompt:  desc + fmt.Sprintf(" It has spent $%.2f of its $%.2f cap. Raise the cap to $%.2f and send it again, or terminate?", s.CostUSD, s.CapUSD, max(s.CapUSD, s.CostUSD)+by),
			options: []decision.Option{optRaiseCap, optTerminate},
			escalation: func() *amp.Message {
				return t.escalate(ctx, amp.EscUnknown, amp.SeverityWarning, amp.RoleSystem, desc, []string{f.MsgID},
					"Raise the cap and send it again", "Terminate the task")
			},
			withdraw: "superseded by a failed delivery"})
	}
	// f.Raised is the guard: each failed delivery is raised once.
	return t.raise(ctx, question{kind: task.KindDeliveryFailed, prompt: desc + " Send it again, keep waiting or terminate?",
		options: []decision.Option{again, optWait, optTerminate},
		escalation: func() *amp.Message {
			return t.escalate(ctx, amp.EscUnknown, amp.SeverityWarning, amp.RoleSystem, desc, []string{f.MsgID},
				"Send it again", "Keep waiting for the "+string(f.To), "Terminate the task")
		},
		withdraw: "superseded by a failed delivery"})
}

// clearFailed forgets a failed delivery once the task moves on, with the
// Last error it set.
func (t *taskRun) clearFailed() {
	if t.Failed == nil {
		return
	}
	if t.LastError == t.Failed.line() {
		t.LastError = ""
	}
	t.Failed = nil
}
