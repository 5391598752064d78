package decide

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// Check says whether an answer would be taken, and which option it
// picks. It reads the state and never changes it: it is the body of the
// update's validator and the first step of Answer.
func (e *Engine) Check(a decision.Answer) (decision.Option, error) {
	if o, ok := e.outcomeOf(a.DecisionID); ok {
		if !e.host.MayDecide(a.By, true) {
			return decision.Option{}, refusal.New(task.CodeForbidden, "by: %q is not a configured admin", a.By)
		}
		if o.Option == decision.OptWithdrawn {
			return decision.Option{}, refusal.New(task.CodeStaleDecision, "decision_id: decision %s was withdrawn at %s (%s); %s",
				o.DecisionID, stamp(o.At), o.Note, e.pendingNote())
		}
		return decision.Option{}, refusal.New(task.CodeDecided, "%s", o.Refusal())
	}
	d := e.s.Open
	if d == nil || d.ID != a.DecisionID {
		if !e.host.MayDecide(a.By, true) {
			return decision.Option{}, refusal.New(task.CodeForbidden, "by: %q is not a configured admin", a.By)
		}
		return decision.Option{}, refusal.New(task.CodeStaleDecision, "decision_id: unknown decision %q for %s; %s", a.DecisionID, e.subject, e.pendingNote())
	}
	if !e.host.MayDecide(a.By, !d.EscalatedAt.IsZero()) {
		if e.host.MayDecide(a.By, true) {
			return decision.Option{}, refusal.New(task.CodeForbidden, "by: %q is in the escalation group, which may decide %s once it has escalated", a.By, d.ID)
		}
		return decision.Option{}, refusal.New(task.CodeForbidden, "by: %q is not a configured admin", a.By)
	}
	if a.Digest == "" {
		return decision.Option{}, refusal.New(task.CodeStaleDecision, "digest: required: send the digest of decision %s as it was shown (%s)", d.ID, d.Digest)
	}
	if a.Digest != d.Digest {
		return decision.Option{}, refusal.New(task.CodeStaleDecision, "digest: %q is not the digest of decision %s (%s): what it asks about is not what was shown; read it again",
			a.Digest, d.ID, d.Digest)
	}
	opt, ok := d.Option(a.Option)
	if !ok {
		ids := make([]string, 0, len(d.Options))
		for _, o := range d.Options {
			ids = append(ids, o.ID)
		}
		return decision.Option{}, refusal.Field("option", "%q is not offered; choose one of %s", a.Option, strings.Join(ids, ", "))
	}
	if opt.NoteRequired && strings.TrimSpace(a.Note) == "" {
		return decision.Option{}, refusal.Field("note", "required for option %s", opt.ID)
	}
	return opt, nil
}

// Reply is what an answer did.
type Reply struct {
	// Outcome is set when the answer closed the decision.
	Outcome *decision.Outcome
	// Open is the decision still open, with its approvals, when the
	// answer was an approval short of the quorum.
	Open *decision.Decision
	// Note says why nothing changed: the admin's approval was counted
	// already.
	Note string
}

// Answer takes an admin's answer. An approval of a decision that needs a
// quorum is counted (once per admin) until the quorum is reached; any
// other option, or the last approval needed, closes the decision.
//
// An answer is taken only when a channel holding the decision key signed
// it (see Verify); what the validator passed is checked again after.
func (e *Engine) Answer(ctx workflow.Context, a decision.Answer) (Reply, error) {
	if err := e.Verify(ctx, a); err != nil {
		return Reply{}, err
	}
	opt, err := e.Check(a)
	if err != nil {
		return Reply{}, err
	}
	d := e.s.Open
	if opt.ID == decision.OptApprove && d.Required > 1 {
		if e.approvedBy(*d, a.By) {
			pending := cloneDecision(*d)
			return Reply{Open: &pending, Note: fmt.Sprintf("the approval of %s was counted already (%s)", e.person(a.By), d.Progress())}, nil
		}
		ap := decision.Approval{By: a.By, Channel: a.Channel, At: workflow.Now(ctx), Note: a.Note}
		d.Approvals = append(d.Approvals, ap)
		if len(d.Approvals) < d.Required {
			e.host.Record(ctx, fmt.Sprintf("%s-approval-%d", d.ID, len(d.Approvals)), ApprovalRecord{
				DecisionID: d.ID, Subject: d.Subject, Digest: d.Digest, Approval: ap, Progress: d.Progress(),
			})
			e.host.Notify(ctx, EventProgress, *d, nil)
			pending := cloneDecision(*d)
			return Reply{Open: &pending}, nil
		}
	}
	o := e.Settle(ctx, a.Option, a.Note, a.By, a.Channel)
	return Reply{Outcome: &o}, nil
}

// ApprovalRecord is the SSOT record of one approval towards a quorum.
type ApprovalRecord struct {
	DecisionID string            `json:"decision_id"`
	Subject    string            `json:"subject"`
	Digest     string            `json:"digest"`
	Approval   decision.Approval `json:"approval"`
	Progress   decision.Progress `json:"progress"`
}

func (e *Engine) outcomeOf(id string) (decision.Outcome, bool) {
	for i := len(e.s.Decided) - 1; i >= 0; i-- {
		if e.s.Decided[i].DecisionID == id {
			return e.s.Decided[i], true
		}
	}
	return decision.Outcome{}, false
}

func (e *Engine) pendingNote() string {
	if e.s.Open != nil {
		return "the open decision is " + e.s.Open.ID
	}
	return "no decision is open"
}

// decidedBy says who closed a decision, how and when; for a quorum, every
// approver.
func cloneDecision(d decision.Decision) decision.Decision {
	d.Approvals = append([]decision.Approval(nil), d.Approvals...)
	return d
}
