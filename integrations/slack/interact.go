package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/task"
)

// interaction turns one Slack interaction into the payload that
// acknowledges it and the work to do after the acknowledgement. A
// redelivered interaction yields no work.
func (b *Bot) interaction(cb slackapi.InteractionCallback) (ack any, work func(context.Context)) {
	now := b.now()
	switch cb.Type {
	case slackapi.InteractionTypeBlockActions:
		var tokens []string
		for _, a := range cb.ActionCallback.BlockActions {
			if a == nil || a.BlockID != actionsBlockID {
				continue
			}
			if b.seen.first("click:"+cb.User.ID+":"+a.ActionTs+":"+a.Value, now) {
				tokens = append(tokens, a.Value)
			}
		}
		if len(tokens) == 0 {
			return nil, nil
		}
		channel := cb.Channel.ID
		if channel == "" {
			channel = cb.Container.ChannelID
		}
		return nil, func(ctx context.Context) {
			for _, tok := range tokens {
				b.click(ctx, cb.User.ID, channel, cb.TriggerID, tok)
			}
		}
	case slackapi.InteractionTypeViewSubmission:
		if cb.View.CallbackID != noteCallbackID {
			return nil, nil
		}
		var note string
		if cb.View.State != nil {
			note = strings.TrimSpace(cb.View.State.Values[noteBlockID][noteActionID].Value)
		}
		if note == "" {
			return slackapi.NewErrorsViewSubmissionResponse(map[string]string{noteBlockID: "A note is required."}), nil
		}
		if !b.seen.first("note:"+cb.View.ID+":"+cb.View.Hash, now) {
			return nil, nil
		}
		return nil, func(ctx context.Context) { b.submitNote(ctx, cb.User.ID, cb.View.PrivateMetadata, note) }
	}
	return nil, nil
}

// click takes one button press. The platform has been acknowledged.
func (b *Bot) click(ctx context.Context, user, channel, triggerID, token string) {
	if !b.isAdmin(user) {
		b.log.Warn("click refused: not an admin", "user", user, "channel", channel)
		b.tell(ctx, channel, user, fmt.Sprintf("⛔ Only ampflow admins can decide. Ask one to add your Slack user id (%s) to slack.admins.", user))
		return
	}
	btn, p, ok := b.store.Lookup(token)
	if !ok {
		b.tell(ctx, channel, user, "This button is no longer valid: its decision is closed or unknown.")
		return
	}
	if p.Outcome != nil {
		b.tell(ctx, channel, user, "⚠️ "+alreadyText(p.Decision, *p.Outcome))
		return
	}
	opt, ok := p.Decision.Option(btn.Option)
	if !ok {
		b.tell(ctx, channel, user, "This option is not offered any more.")
		return
	}
	if opt.NoteRequired {
		err := b.call(ctx, "views.open", func() error {
			_, err := b.api.OpenViewContext(ctx, triggerID, RenderNoteModal(p.Decision, opt, token))
			return err
		})
		if err != nil {
			b.log.Error("opening note form", "decision", p.Decision.ID, "user", user, "err", err)
			b.tell(ctx, channel, user, fmt.Sprintf("Could not open the note form; decide with `ampflow decide %s` instead.", p.Decision.TaskID))
		}
		return
	}
	b.decide(ctx, user, channel, p.Decision, opt.ID, "")
}

// submitNote takes the note modal of an option that requires one.
func (b *Bot) submitNote(ctx context.Context, user, token, note string) {
	btn, p, ok := b.store.Lookup(token)
	channel := b.cfg.Channel
	if ok && len(p.Messages) > 0 {
		channel = p.Messages[0].Channel
	}
	if !b.isAdmin(user) {
		b.log.Warn("note refused: not an admin", "user", user)
		b.tell(ctx, channel, user, fmt.Sprintf("⛔ Only ampflow admins can decide. Ask one to add your Slack user id (%s) to slack.admins.", user))
		return
	}
	if !ok {
		b.tell(ctx, channel, user, "This decision is closed or unknown; your note was not used.")
		return
	}
	if p.Outcome != nil {
		b.tell(ctx, channel, user, "⚠️ "+alreadyText(p.Decision, *p.Outcome))
		return
	}
	b.decide(ctx, user, channel, p.Decision, btn.Option, note)
}

// decide applies an admin's choice and edits the message at once; the
// workflow's decision_closed notice finds it edited already.
func (b *Bot) decide(ctx context.Context, user, channel string, d task.Decision, option, note string) {
	in := task.DecideInput{DecisionID: d.ID, Option: option, Note: note, By: workflows.SlackAdmin(user), Channel: Channel}
	dctx, cancel := context.WithTimeout(ctx, b.decideTimeout)
	res, err := b.dec.Decide(dctx, d.TaskID, in)
	cancel()
	if err != nil {
		b.log.Info("decision refused", "decision", d.ID, "user", user, "option", option, "err", err)
		b.tell(ctx, channel, user, refusalText(err))
		return
	}
	b.log.Info("decided", "decision", d.ID, "task", d.TaskID, "user", user, "option", option)
	o := res.Outcome
	if o.DecisionID == "" {
		o = task.Outcome{DecisionID: d.ID, Kind: d.Kind, Option: option, Note: note, By: in.By, Channel: Channel, At: b.now()}
	}
	if err := b.closeDecision(ctx, d, o); err != nil {
		b.log.Error("editing decided message", "decision", d.ID, "err", err)
	}
}

// tell sends a message only user sees.
func (b *Bot) tell(ctx context.Context, channel, user, text string) {
	if channel == "" {
		channel = b.cfg.Channel
	}
	err := b.call(ctx, "chat.postEphemeral", func() error {
		_, err := b.api.PostEphemeralContext(ctx, channel, user, slackapi.MsgOptionText(esc(text), false))
		return err
	})
	if err != nil {
		b.log.Error("telling user", "user", user, "err", err)
	}
}

func alreadyText(d task.Decision, o task.Outcome) string {
	return fmt.Sprintf("Already decided: %s by %s via %s at %s.", optionLabel(d, o.Option), o.By, o.Channel, stamp(o.At))
}

// refusalText is what the clicker reads when the workflow refuses: its own
// plain message ("… already decided by X via Y at T"), or a generic line
// when the cause is internal.
func refusalText(err error) string {
	var te *task.Error
	if errors.As(err, &te) && te.Code != task.CodeInternal && te.Code != task.CodeUnavailable {
		return "⚠️ " + te.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "ampflow did not answer in time; the message updates if the decision was recorded."
	}
	return "ampflow could not record the decision; try again, or use the CLI."
}
