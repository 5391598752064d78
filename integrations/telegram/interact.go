package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
)

// onUpdate takes every update the library receives, by polling or webhook.
func (b *Bot) onUpdate(ctx context.Context, _ *tgbot.Bot, upd *models.Update) {
	if upd == nil {
		return
	}
	if !b.seen.First(strconv.FormatInt(upd.ID, 10), b.now()) {
		b.log.Debug("update redelivered; ignored", "update", upd.ID)
		return
	}
	switch {
	case upd.CallbackQuery != nil:
		b.onCallback(ctx, upd.CallbackQuery)
	case upd.Message != nil && upd.Message.ReplyToMessage != nil:
		b.onReply(ctx, upd.Message)
	}
}

func noteKey(chat int64, message int) string { return fmt.Sprintf("%d:%d", chat, message) }

// onCallback takes a button press. Every path answers the callback query,
// or the clicker's client shows a spinner; the answer is also the only
// place to tell the clicker alone, so it carries the result, which
// decideTimeout keeps prompt.
func (b *Bot) onCallback(ctx context.Context, q *models.CallbackQuery) {
	ans := &tgbot.AnswerCallbackQueryParams{CallbackQueryID: q.ID}
	defer b.answer(ctx, ans)
	user := strconv.FormatInt(q.From.ID, 10)
	if !b.mayDecide(user, q.Data) {
		b.log.Warn("click refused: not an admin", "user", user)
		ans.Text, ans.ShowAlert = b.core.NotAdminText(user), true
		return
	}
	p, opt, refusal := b.core.Pick(q.Data)
	if refusal != "" {
		ans.Text, ans.ShowAlert = refusal, true
		return
	}
	if opt.NoteRequired {
		if err := b.askNote(ctx, q.From, p, opt, q.Data); err != nil {
			b.log.Error("asking for a note", "decision", p.Decision.ID, "user", user, "err", err)
			ans.Text, ans.ShowAlert = fmt.Sprintf("Could not ask for the note; decide with `ampflow decide %s` instead.", p.Decision.Subject), true
			return
		}
		ans.Text = "Reply to my message with your note."
		return
	}
	ans.Text, ans.ShowAlert = b.decide(ctx, user, p.Decision, opt.ID, "")
}

func (b *Bot) answer(ctx context.Context, ans *tgbot.AnswerCallbackQueryParams) {
	err := b.call(ctx, "answerCallbackQuery", func() error {
		_, err := b.api.AnswerCallbackQuery(ctx, ans)
		return err
	})
	if err != nil {
		b.log.Error("answering callback", "err", err)
	}
}

// askNote sends a force-reply prompt for the note of opt and remembers
// who must answer it.
func (b *Bot) askNote(ctx context.Context, from models.User, p posted, opt decision.Option, token string) error {
	var reply *models.ReplyParameters
	if len(p.Messages) > 0 {
		reply = &models.ReplyParameters{MessageID: p.Messages[0].MessageID, AllowSendingWithoutReply: true}
	}
	force := &models.ForceReply{ForceReply: true, Selective: true, InputFieldPlaceholder: chat.Clip("Note for "+chat.OptionLabel(p.Decision, opt.ID), 64)}
	sent, err := b.send(ctx, RenderNotePrompt(p.Decision, opt, from.ID, from.FirstName), reply, force)
	if err != nil {
		return err
	}
	return b.core.PutNote(ctx, noteKey(sent.Chat.ID, sent.ID), chat.Note{Token: token, UserID: strconv.FormatInt(from.ID, 10), At: b.now()})
}

// onReply takes a reply to a note prompt, from the admin who was asked.
// Other replies are none of the bot's business.
func (b *Bot) onReply(ctx context.Context, m *models.Message) {
	key := noteKey(m.Chat.ID, m.ReplyToMessage.ID)
	req, ok, err := b.core.Note(ctx, key)
	if err != nil {
		b.log.Error("reading note request", "err", err)
		return
	}
	if !ok || m.From == nil {
		return
	}
	user := strconv.FormatInt(m.From.ID, 10)
	if user != req.UserID || !b.mayDecide(user, req.Token) {
		b.log.Warn("note reply ignored: not from the admin asked", "user", user, "asked", req.UserID)
		return
	}
	note := strings.TrimSpace(m.Text)
	if note == "" {
		b.reply(ctx, m, "A note is required: reply to my message again, with text.")
		return
	}
	// Of two workers given the same reply, the one that drops the
	// request goes on.
	if dropped, err := b.core.DropNote(ctx, key); err != nil {
		b.log.Error("dropping note request", "err", err)
	} else if !dropped {
		return
	}
	p, option, refusal := b.core.PickNote(req.Token)
	if refusal != "" {
		b.reply(ctx, m, refusal)
		return
	}
	text, _ := b.decide(ctx, user, p.Decision, option, note)
	b.reply(ctx, m, text)
}

func (b *Bot) reply(ctx context.Context, to *models.Message, text string) {
	_, err := b.send(ctx, Message{Text: esc(text)}, &models.ReplyParameters{MessageID: to.ID, AllowSendingWithoutReply: true}, nil)
	if err != nil {
		b.log.Error("replying", "err", err)
	}
}

// decide applies an admin's choice. It returns what to tell the admin,
// and whether it is a refusal, clipped to fit a callback answer.
func (b *Bot) decide(ctx context.Context, user string, d decision.Decision, option, note string) (string, bool) {
	text, refused := b.core.Decide(ctx, user, d, option, note)
	if refused {
		text = chat.Clip(text, 200)
	}
	return text, refused
}
