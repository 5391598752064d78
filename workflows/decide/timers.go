package decide

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp/decision"
)

// step is what happens to an unanswered decision next.
type step int

const (
	stepNone step = iota
	stepRemind
	stepEscalate
	stepExpire
)

// next returns the earliest step of d not yet taken and when it is due.
// Every time counts from RaisedAt, so a new run after a continue-as-new
// or a restart takes a due step at once and a passed one never again.
func (e *Engine) next(d decision.Decision) (time.Time, step) {
	var p decision.Policy
	if e.policy != nil {
		p = *e.policy
	}
	at, s := time.Time{}, stepNone
	consider := func(t time.Time, st step) {
		if s == stepNone || t.Before(at) {
			at, s = t, st
		}
	}
	if p.RemindAfter > 0 && d.RemindedAt.IsZero() {
		consider(d.RaisedAt.Add(p.RemindAfter), stepRemind)
	}
	if p.EscalateAfter > 0 && d.EscalatedAt.IsZero() {
		consider(d.RaisedAt.Add(p.EscalateAfter), stepEscalate)
	}
	if !d.ExpiresAt.IsZero() {
		consider(d.ExpiresAt, stepExpire)
	}
	return at, s
}

// watch runs the open decision's timers in a coroutine of the root
// context, one durable timer at a time, until it closes. Nothing happens
// before Start: Start resumes what Open could not.
func (e *Engine) watch() {
	d := e.s.Open
	if e.root == nil || d == nil || e.watching == d.ID {
		return
	}
	id := d.ID
	e.watching = id
	workflow.Go(e.root, func(ctx workflow.Context) {
		defer func() {
			if e.watching == id {
				e.watching = ""
			}
		}()
		gone := func() bool { return e.s.Open == nil || e.s.Open.ID != id }
		for !gone() {
			at, s := e.next(*e.s.Open)
			if s == stepNone {
				return
			}
			if wait := at.Sub(workflow.Now(ctx)); wait > 0 {
				done, err := workflow.AwaitWithTimeout(ctx, wait, gone)
				if err != nil || done {
					return
				}
			}
			e.take(ctx, s)
		}
	})
}

// take applies a due step to the open decision.
func (e *Engine) take(ctx workflow.Context, s step) {
	d := e.s.Open
	now := workflow.Now(ctx)
	switch s {
	case stepRemind:
		d.RemindedAt = now
		e.host.Record(ctx, d.ID+"-reminder", StepRecord{DecisionID: d.ID, Subject: d.Subject, Step: string(EventReminded), At: now})
		e.host.Notify(ctx, EventReminded, *d, nil)
	case stepEscalate:
		d.EscalatedAt = now
		e.host.Record(ctx, d.ID+"-escalated", StepRecord{DecisionID: d.ID, Subject: d.Subject, Step: string(EventEscalated), At: now})
		e.host.Notify(ctx, EventEscalated, *d, nil)
	case stepExpire:
		e.Settle(ctx, d.OnExpiry, "no answer within "+span(now.Sub(d.RaisedAt)), decision.By, decision.ChannelExpiry)
	}
}

// StepRecord is the SSOT record of a reminder or an escalation.
type StepRecord struct {
	DecisionID string    `json:"decision_id"`
	Subject    string    `json:"subject"`
	Step       string    `json:"step"`
	At         time.Time `json:"at"`
}

// span reads a duration as people write it: 24h, 90m, 45s.
func span(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
