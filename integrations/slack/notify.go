package slack

import (
	"context"

	slackapi "github.com/slack-go/slack"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Notify implements notify.Notifier. It is safe to retry: what was
// posted already is not posted again, and a closed decision is edited once.
func (b *Bot) Notify(ctx context.Context, in notify.Input) error {
	return b.core.Notify(ctx, in)
}

// poster is the Slack side of chat.Core: Web API calls with Block Kit.
type poster struct{ *Bot }

// post posts a message to the configured channel, without link previews.
func (p poster) post(ctx context.Context, opts ...slackapi.MsgOption) (channel, ts string, err error) {
	err = p.call(ctx, "chat.postMessage", func() (err error) {
		channel, ts, err = p.api.PostMessageContext(ctx, p.cfg.Channel, append(opts, slackapi.MsgOptionDisableLinkUnfurl())...)
		return err
	})
	return channel, ts, err
}

// PostDecision, EditClosed, PostEscalation and PostStatus implement
// chat.Poster.
func (p poster) PostDecision(ctx context.Context, d decision.Decision, tokens []string, how chat.Post) (msgRef, error) {
	channel, ts, err := p.post(ctx, slackapi.MsgOptionBlocks(RenderPost(d, tokens, how)...), slackapi.MsgOptionText(PostText(d, how), false))
	if err != nil {
		return msgRef{}, err
	}
	p.log.Info("decision posted", "decision", d.ID, "subject", d.Subject, "channel", channel, "ts", ts, "reminder", how.Reminder, "escalated", how.Escalated)
	return msgRef{Channel: channel, TS: ts}, nil
}

func (p poster) EditOpen(ctx context.Context, ref msgRef, d decision.Decision, tokens []string, how chat.Post) error {
	return p.call(ctx, "chat.update", func() error {
		_, _, _, err := p.api.UpdateMessageContext(ctx, ref.Channel, ref.TS,
			slackapi.MsgOptionBlocks(RenderPost(d, tokens, how)...),
			slackapi.MsgOptionText(PostText(d, how), false))
		return err
	})
}

func (p poster) EditClosed(ctx context.Context, ref msgRef, d decision.Decision, o decision.Outcome) error {
	return p.call(ctx, "chat.update", func() error {
		_, _, _, err := p.api.UpdateMessageContext(ctx, ref.Channel, ref.TS,
			slackapi.MsgOptionBlocks(RenderClosed(d, o)...),
			slackapi.MsgOptionText(ClosedText(d, o), false))
		return err
	})
}

func (p poster) PostEscalation(ctx context.Context, m amp.Message) error {
	_, _, err := p.post(ctx, slackapi.MsgOptionBlocks(RenderEscalation(m)...), slackapi.MsgOptionText(EscalationText(m), false))
	return err
}

func (p poster) PostStatus(ctx context.Context, in notify.Input) error {
	_, _, err := p.post(ctx, slackapi.MsgOptionText(RenderStatus(in), false))
	return err
}
