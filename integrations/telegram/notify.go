package telegram

import (
	"context"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

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

func (b *Bot) send(ctx context.Context, m Message, reply *models.ReplyParameters, markup models.ReplyMarkup) (*models.Message, error) {
	p := &tgbot.SendMessageParams{
		ChatID:             b.chat,
		Text:               m.Text,
		ParseMode:          ParseMode,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: tgbot.True()},
		ReplyParameters:    reply,
	}
	if markup != nil {
		p.ReplyMarkup = markup
	} else if m.Keyboard != nil {
		p.ReplyMarkup = m.Keyboard
	}
	var sent *models.Message
	err := b.call(ctx, "sendMessage", func() (err error) {
		sent, err = b.api.SendMessage(ctx, p)
		return err
	})
	return sent, err
}

// poster is the Telegram side of chat.Core: Bot API calls with HTML text
// and inline keyboards.
type poster struct{ *Bot }

// PostDecision, EditClosed, PostEscalation and PostStatus implement
// chat.Poster.
func (p poster) PostDecision(ctx context.Context, d decision.Decision, tokens []string, how chat.Post) (msgRef, error) {
	sent, err := p.send(ctx, RenderPost(d, tokens, how), nil, nil)
	if err != nil {
		return msgRef{}, err
	}
	p.log.Info("decision posted", "decision", d.ID, "subject", d.Subject, "chat", sent.Chat.ID, "message", sent.ID, "reminder", how.Reminder, "escalated", how.Escalated)
	return msgRef{ChatID: sent.Chat.ID, MessageID: sent.ID}, nil
}

func (p poster) EditOpen(ctx context.Context, ref msgRef, d decision.Decision, tokens []string, how chat.Post) error {
	return p.edit(ctx, ref, RenderPost(d, tokens, how))
}

// edit replaces the text and buttons of a posted message.
func (p poster) edit(ctx context.Context, ref msgRef, m Message) error {
	return p.call(ctx, "editMessageText", func() error {
		_, err := p.api.EditMessageText(ctx, &tgbot.EditMessageTextParams{
			ChatID: ref.ChatID, MessageID: ref.MessageID, Text: m.Text, ParseMode: ParseMode,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: tgbot.True()},
			ReplyMarkup:        m.Keyboard,
		})
		return err
	})
}

func (p poster) EditClosed(ctx context.Context, ref msgRef, d decision.Decision, o decision.Outcome) error {
	return p.edit(ctx, ref, RenderClosed(d, o))
}

func (p poster) PostEscalation(ctx context.Context, m amp.Message) error {
	_, err := p.send(ctx, RenderEscalation(m), nil, nil)
	return err
}

func (p poster) PostStatus(ctx context.Context, in notify.Input) error {
	_, err := p.send(ctx, RenderStatus(in), nil, nil)
	return err
}
