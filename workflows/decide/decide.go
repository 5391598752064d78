// Package decide is the decision engine every ampflow workflow embeds to
// ask its admins something: it opens a decision bound by a digest to
// exactly what is approved, takes each answer once, counts a quorum of
// distinct admins, reminds, escalates and finally expires a decision
// nobody answers (never into an approval), and records every step in the
// SSOT through its host.
//
// The engine's state is a State the host keeps inside its own carried
// state, so a continue-as-new or a worker restart resumes it, timers
// included: every deadline is measured from the decision's RaisedAt, and
// a step already taken (RemindedAt, EscalatedAt) is not taken again.
package decide

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
)

// State is what the engine carries. A workflow has at most one decision
// open at a time: a new question withdraws the old one.
type State struct {
	// Open is the decision waiting for the admins.
	Open *decision.Decision `json:"open,omitempty"`
	// Answer is how the last decision was closed, until the host takes it.
	Answer *decision.Outcome `json:"answer,omitempty"`
	// Decided lists every closed decision, withdrawn ones included.
	Decided []decision.Outcome `json:"decided,omitempty"`
	// Seq numbers the decisions: ids are "<subject>-d<seq>".
	Seq int `json:"seq"`
}

// Event names a step the engine tells the admins about. The host maps
// each to its own notice.
type Event string

// Engine events.
const (
	EventOpened    Event = "opened"    // a decision was opened
	EventProgress  Event = "progress"  // an approval was counted, the quorum not yet reached
	EventReminded  Event = "reminded"  // remind_after passed without an answer
	EventEscalated Event = "escalated" // escalate_after passed: the escalation group may decide
	EventClosed    Event = "closed"    // answered, withdrawn or expired
)

// Host is what the engine needs from the workflow that embeds it.
type Host interface {
	// Record queues an SSOT record (a decision, an approval, a reminder,
	// an escalation or an outcome) under id.
	Record(ctx workflow.Context, id string, body any)
	// Notify tells the admins of a step; o is set for EventClosed.
	Notify(ctx workflow.Context, ev Event, d decision.Decision, o *decision.Outcome)
	// MayDecide reports whether by may answer; escalated says the
	// decision has escalated, so the escalation group counts too.
	MayDecide(by string, escalated bool) bool
}

// Engine runs the decisions of one workflow. Build it on every run with
// New, then call Start from the workflow's setup.
type Engine struct {
	s       *State
	subject string
	policy  *decision.Policy
	host    Host
	// root is the context the timer coroutines run in: the workflow's
	// own, so a phase's cancelled context does not stop them.
	root workflow.Context
	// watching is the id of the decision whose timers run in this run.
	watching string
}

// New returns the engine of subject (the workflow id) over s. policy is
// read each time it is needed, so a host may set it after New (a task
// learns its policy in its first step).
func New(s *State, subject string, policy *decision.Policy, h Host) *Engine {
	return &Engine{s: s, subject: subject, policy: policy, host: h}
}

// Start gives the engine the workflow's root context and resumes the
// timers of a decision carried over from an earlier run. Call it before
// the first blocking call.
func (e *Engine) Start(ctx workflow.Context) {
	e.root = ctx
	e.watch()
}

// Request is a decision to raise.
type Request struct {
	Kind    decision.Kind
	Prompt  string
	Options []decision.Option
	Context decision.Context
	// Escalation is the escalation message behind the question, if any.
	Escalation *amp.Message
	// Approves is exactly what an approval approves; its digest binds
	// every answer. What to pass per kind is the host's choice.
	Approves any
	// Required is the number of distinct admins who must approve; zero
	// counts as one.
	Required int
	// OnExpiry is the option taken when the decision expires. It must
	// not be decision.OptApprove: nobody answering never approves.
	OnExpiry string
	// ExpiresAt, when set, is a deadline of the host's own (what is
	// approved stops being valid then): the decision expires at the
	// earlier of it and the policy's expire_after.
	ExpiresAt time.Time
}

// Raise opens a decision: it becomes the open one, goes to the SSOT and
// out to the admins, and its reminder, escalation and expiry timers start.
func (e *Engine) Raise(ctx workflow.Context, r Request) (decision.Decision, error) {
	switch r.OnExpiry {
	case "":
		return decision.Decision{}, fmt.Errorf("opening a %s decision of %s: on_expiry is required", r.Kind, e.subject)
	case decision.OptApprove:
		return decision.Decision{}, fmt.Errorf("opening a %s decision of %s: on_expiry must not be %s", r.Kind, e.subject, decision.OptApprove)
	}
	dg, err := decision.Digest(r.Approves)
	if err != nil {
		return decision.Decision{}, fmt.Errorf("opening a %s decision of %s: %w", r.Kind, e.subject, err)
	}
	e.s.Seq++
	now := workflow.Now(ctx)
	d := decision.Decision{
		ID:         fmt.Sprintf("%s-d%d", e.subject, e.s.Seq),
		Subject:    e.subject,
		Kind:       r.Kind,
		Prompt:     r.Prompt,
		Options:    r.Options,
		Context:    r.Context,
		Escalation: r.Escalation,
		Digest:     dg,
		RaisedAt:   now,
		OnExpiry:   r.OnExpiry,
		Required:   max(r.Required, 1),
	}
	if p := e.policy; p != nil && p.ExpireAfter > 0 {
		d.ExpiresAt = now.Add(p.ExpireAfter)
	}
	if at := r.ExpiresAt; !at.IsZero() && (d.ExpiresAt.IsZero() || at.Before(d.ExpiresAt)) {
		d.ExpiresAt = at
	}
	e.s.Open = &d
	e.host.Record(ctx, d.ID, d)
	e.host.Notify(ctx, EventOpened, d, nil)
	e.watch()
	return d, nil
}

// Settle closes the open decision with option: an admin's answer that
// decides, a host's own (a replan), or the expiry. The outcome waits in
// State.Answer until the host takes it.
func (e *Engine) Settle(ctx workflow.Context, option, note, by, channel string) decision.Outcome {
	d := e.s.Open
	now := workflow.Now(ctx)
	o := decision.Outcome{
		DecisionID: d.ID, Subject: d.Subject, Kind: d.Kind, Option: option, Note: note,
		By: by, Channel: channel, At: now, Digest: d.Digest,
	}
	if option == decision.OptApprove {
		o.Approvers = slices.Clone(d.Approvals)
		if !e.approvedBy(*d, by) {
			o.Approvers = append(o.Approvers, decision.Approval{By: by, Channel: channel, At: now, Note: note})
		}
	}
	e.s.Open = nil
	e.s.Decided = append(e.s.Decided, o)
	e.s.Answer = &o
	e.host.Record(ctx, d.ID+"-outcome", o)
	e.host.Notify(ctx, EventClosed, *d, &o)
	return o
}

// Withdraw closes the open decision without an admin because what it
// asked became moot; no answer waits to be taken afterwards.
func (e *Engine) Withdraw(ctx workflow.Context, why string) {
	if e.s.Open == nil {
		return
	}
	e.Settle(ctx, decision.OptWithdrawn, why, decision.By, decision.ChannelSystem)
	e.s.Answer = nil
}

// Pending returns the open decision, or nil.
func (e *Engine) Pending() *decision.Decision { return e.s.Open }

// Decided returns every closed decision.
func (e *Engine) Decided() []decision.Outcome { return e.s.Decided }

// Answered reports whether an answer to a decision of one of kinds waits
// to be taken.
func (e *Engine) Answered(kinds ...decision.Kind) bool {
	return e.s.Answer != nil && slices.Contains(kinds, e.s.Answer.Kind)
}

// AnsweredKind returns the kind of the answer waiting to be taken.
func (e *Engine) AnsweredKind() (decision.Kind, bool) {
	if e.s.Answer == nil {
		return "", false
	}
	return e.s.Answer.Kind, true
}

// Take returns and clears the waiting answer if it is to one of kinds:
// a step takes only the answer to the question it asked.
func (e *Engine) Take(kinds ...decision.Kind) *decision.Outcome {
	if !e.Answered(kinds...) {
		return nil
	}
	o := e.s.Answer
	e.s.Answer = nil
	return o
}

// Drop forgets a waiting answer of any kind, as when the workflow ends.
func (e *Engine) Drop() { e.s.Answer = nil }

// Asking reports whether a decision of one of kinds is open or answered
// but not yet taken, and which: a step entered again goes back to it.
func (e *Engine) Asking(kinds ...decision.Kind) (decision.Kind, bool) {
	if e.Answered(kinds...) {
		return e.s.Answer.Kind, true
	}
	if d := e.s.Open; d != nil && slices.Contains(kinds, d.Kind) {
		return d.Kind, true
	}
	return "", false
}

// PendingOf returns the open decision if it is of one of kinds.
func (e *Engine) PendingOf(kinds ...decision.Kind) *decision.Decision {
	if d := e.s.Open; d != nil && slices.Contains(kinds, d.Kind) {
		return d
	}
	return nil
}

// approvedBy says whether the person holding identity by approved d
// already, from any channel.
func (e *Engine) approvedBy(d decision.Decision, by string) bool {
	p := e.person(by)
	return slices.ContainsFunc(d.Approvals, func(a decision.Approval) bool { return e.person(a.By) == p })
}

func (e *Engine) person(by string) string {
	if e.policy == nil {
		return by
	}
	return e.policy.Person(by)
}

// stamp formats a time for refusals and notes.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
