package chat

import (
	"context"

	"github.com/ampflow/ampflow/amp/decision"
)

// Pick resolves a pressed button's token to its decision and option. When
// nothing can be decided, refusal says why, for the clicker alone.
func (c *Core[R, D]) Pick(token string) (p Posted[R], opt decision.Option, refusal string) {
	b, p, ok, err := c.lookup(token)
	if err != nil {
		return p, opt, StateErrorText
	}
	if !ok {
		return p, opt, StaleButtonText
	}
	if p.Outcome != nil {
		return p, opt, "⚠️ " + AlreadyText(p.Decision, *p.Outcome)
	}
	if opt, ok = p.Decision.Option(b.Option); !ok {
		return p, opt, StaleOptionText
	}
	return p, opt, ""
}

// PickNote is Pick for a note that arrives for the option of token; p is
// the zero value when the token is unknown.
func (c *Core[R, D]) PickNote(token string) (p Posted[R], option, refusal string) {
	b, p, ok, err := c.lookup(token)
	if err != nil {
		return p, "", StateErrorText
	}
	if !ok {
		return p, "", StaleNoteText
	}
	if p.Outcome != nil {
		return p, "", "⚠️ " + AlreadyText(p.Decision, *p.Outcome)
	}
	return p, b.Option, ""
}

// lookup finds a token's button and decision, within stateTimeout: the
// platforms' callbacks give Pick no context.
func (c *Core[R, D]) lookup(token string) (Button, Posted[R], bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	b, p, ok, err := c.state().Button(ctx, token)
	if err != nil {
		c.Log.Error("looking up a button", "err", err)
	}
	return b, p, ok, err
}

// Decide applies an admin's choice and edits the posted copies at once;
// the workflow's decision_closed notice then finds them edited. It
// returns what to tell the admin, and whether it is a refusal.
func (c *Core[R, D]) Decide(ctx context.Context, user string, d decision.Decision, option, note string) (string, bool) {
	in := decision.Answer{DecisionID: d.ID, Option: option, Note: note, By: c.By(user), Channel: c.Channel}
	dctx, cancel := context.WithTimeout(ctx, c.DecideTimeout)
	res, err := c.Decider.Decide(dctx, d.Subject, in)
	cancel()
	if err != nil {
		c.Log.Info("decision refused", "decision", d.ID, "user", user, "option", option, "err", err)
		return RefusalText(err), true
	}
	c.Log.Info("decided", "decision", d.ID, "task", d.Subject, "user", user, "option", option)
	o := res.Outcome
	if o.DecisionID == "" {
		o = decision.Outcome{DecisionID: d.ID, Kind: d.Kind, Option: option, Note: note, By: in.By, Channel: c.Channel, At: c.Now()}
	}
	if err := c.CloseDecision(ctx, d, o); err != nil {
		c.Log.Error("editing decided message", "decision", d.ID, "err", err)
	}
	return "✅ Recorded: " + OptionLabel(d, option), false
}
