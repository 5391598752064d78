package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// Pick resolves a pressed button's token to its decision, as the button
// showed it, and option. When nothing can be decided, refusal says why,
// for the clicker alone.
func (c *Core[R]) Pick(token string) (p Posted[R], opt decision.Option, refusal string) {
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
func (c *Core[R]) PickNote(token string) (p Posted[R], option, refusal string) {
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
func (c *Core[R]) lookup(token string) (Button, Posted[R], bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	b, p, ok, err := c.State.Button(ctx, token)
	if err != nil {
		c.Log.Error("looking up a button", "err", err)
	}
	return b, p, ok, err
}

// Decide answers d, as its button showed it (its subject, its digest),
// and edits the posted copies at once: to the outcome when the answer
// closed it, to the quorum's progress when it was an approval that left
// it open. The workflow's notices then find them edited. It returns what
// to tell the admin, and whether it is a refusal.
func (c *Core[R]) Decide(ctx context.Context, user string, d decision.Decision, option, note string) (string, bool) {
	in := decision.Answer{DecisionID: d.ID, Option: option, Note: note, Digest: d.Digest, By: c.By(user), Channel: c.Channel}
	dctx, cancel := context.WithTimeout(ctx, c.DecideTimeout)
	res, err := c.Decider.Decide(dctx, d.Subject, in)
	cancel()
	if err != nil {
		c.Log.Info("decision refused", "decision", d.ID, "subject", d.Subject, "user", user, "option", option, "err", err)
		var te *task.Error
		if errors.As(err, &te) && te.Code == task.CodeStaleDecision {
			return c.changed(ctx, d), true
		}
		return RefusalText(err), true
	}
	if res.Open() {
		c.Log.Info("approval counted", "decision", d.ID, "subject", d.Subject, "user", user, "progress", res.Decision.Progress())
		if err := c.ShowProgress(ctx, *res.Decision); err != nil {
			c.Log.Error("editing the progress of a decision", "decision", d.ID, "err", err)
		}
		return "✅ Approval recorded: " + res.Decision.Progress().String() + ". The decision stays open until the quorum is reached.", false
	}
	c.Log.Info("decided", "decision", d.ID, "subject", d.Subject, "user", user, "option", option)
	o := res.Outcome
	if o.DecisionID == "" {
		o = decision.Outcome{DecisionID: d.ID, Subject: d.Subject, Kind: d.Kind, Option: option, Note: note, By: in.By, Channel: c.Channel, At: c.Now()}
	}
	if err := c.CloseDecision(ctx, d, o); err != nil {
		c.Log.Error("editing decided message", "decision", d.ID, "err", err)
	}
	return "✅ Recorded: " + OptionLabel(d, option), false
}

// changed answers a click on a decision whose digest or id is no longer
// current: nothing was recorded; the open decision of the same subject,
// if there is one, is posted as it stands now, with new buttons.
func (c *Core[R]) changed(ctx context.Context, d decision.Decision) string {
	pending, err := c.Decider.Pending(ctx)
	if err != nil {
		c.Log.Error("listing pending decisions after a stale click", "subject", d.Subject, "err", err)
		return ChangedText
	}
	for _, now := range pending {
		if now.Subject != d.Subject {
			continue
		}
		if err := c.PostAgain(ctx, now, Post{}, fmt.Sprintf("current:%s:%s", now.ID, now.Digest)); err != nil {
			c.Log.Error("posting the current decision after a stale click", "decision", now.ID, "err", err)
			return ChangedText
		}
		return fmt.Sprintf("%s The current one is posted: %s (%s).", ChangedText, now.ID, KindTitle(now.Kind))
	}
	return ChangedText + " Nothing is open on " + d.Subject + " now."
}
