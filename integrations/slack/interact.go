package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/amp/decision"
	slackapi "github.com/slack-go/slack"
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
			if b.seen.First("click:"+cb.User.ID+":"+a.ActionTs+":"+a.Value, now) {
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
		if !b.seen.First("note:"+cb.View.ID+":"+cb.View.Hash, now) {
			return nil, nil
		}
		return nil, func(ctx context.Context) { b.submitNote(ctx, cb.User.ID, cb.View.PrivateMetadata, note) }
	}
	return nil, nil
}

// click takes one button press. The platform has been acknowledged.
func (b *Bot) click(ctx context.Context, user, channel, triggerID, token string) {
	if !b.core.MayDecide(user, token) {
		b.log.Warn("click refused: not an admin", "user", user, "channel", channel)
		b.tell(ctx, channel, user, b.core.NotAdminText(user))
		return
	}
	p, opt, refusal := b.core.Pick(token)
	if refusal != "" {
		b.tell(ctx, channel, user, refusal)
		return
	}
	if opt.NoteRequired {
		err := b.call(ctx, "views.open", func() error {
			_, err := b.api.OpenViewContext(ctx, triggerID, RenderNoteModal(p.Decision, opt, token))
			return err
		})
		if err != nil {
			b.log.Error("opening note form", "decision", p.Decision.ID, "user", user, "err", err)
			b.tell(ctx, channel, user, fmt.Sprintf("Could not open the note form; decide with `ampflow decide %s` instead.", p.Decision.Subject))
		}
		return
	}
	b.decide(ctx, user, channel, p.Decision, opt.ID, "")
}

// submitNote takes the note modal of an option that requires one.
func (b *Bot) submitNote(ctx context.Context, user, token, note string) {
	p, option, refusal := b.core.PickNote(token)
	channel := b.cfg.Channel
	if len(p.Messages) > 0 {
		channel = p.Messages[0].Channel
	}
	if !b.core.MayDecide(user, token) {
		b.log.Warn("note refused: not an admin", "user", user)
		b.tell(ctx, channel, user, b.core.NotAdminText(user))
		return
	}
	if refusal != "" {
		b.tell(ctx, channel, user, refusal)
		return
	}
	b.decide(ctx, user, channel, p.Decision, option, note)
}

// decide applies an admin's choice; only a refusal is told, as the edited
// message shows the rest.
func (b *Bot) decide(ctx context.Context, user, channel string, d decision.Decision, option, note string) {
	if text, refused := b.core.Decide(ctx, user, d, option, note); refused {
		b.tell(ctx, channel, user, text)
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
