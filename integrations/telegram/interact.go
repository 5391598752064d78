package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/task"
)

// onUpdate takes every update the library receives, by polling or webhook.
func (b *Bot) onUpdate(ctx context.Context, _ *tgbot.Bot, upd *models.Update) {
	if upd == nil {
		return
	}
	if !b.seen.first(strconv.FormatInt(upd.ID, 10), b.now()) {
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
	if !b.isAdmin(user) {
		b.log.Warn("click refused: not an admin", "user", user)
		ans.Text, ans.ShowAlert = notAdminText(user), true
		return
	}
	btn, p, ok := b.store.Lookup(q.Data)
	if !ok {
		ans.Text, ans.ShowAlert = "This button is no longer valid: its decision is closed or unknown.", true
		return
	}
	if p.Outcome != nil {
		ans.Text, ans.ShowAlert = "⚠️ "+alreadyText(p.Decision, *p.Outcome), true
		return
	}
	opt, ok := p.Decision.Option(btn.Option)
	if !ok {
		ans.Text, ans.ShowAlert = "This option is not offered any more.", true
		return
	}
	if opt.NoteRequired {
		if err := b.askNote(ctx, q.From, p, opt, q.Data); err != nil {
			b.log.Error("asking for a note", "decision", p.Decision.ID, "user", user, "err", err)
			ans.Text, ans.ShowAlert = fmt.Sprintf("Could not ask for the note; decide with `ampflow decide %s` instead.", p.Decision.TaskID), true
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
func (b *Bot) askNote(ctx context.Context, from models.User, p posted, opt task.Option, token string) error {
	var reply *models.ReplyParameters
	if len(p.Messages) > 0 {
		reply = &models.ReplyParameters{MessageID: p.Messages[0].MessageID, AllowSendingWithoutReply: true}
	}
	force := &models.ForceReply{ForceReply: true, Selective: true, InputFieldPlaceholder: clip("Note for "+optionLabel(p.Decision, opt.ID), 64)}
	sent, err := b.send(ctx, RenderNotePrompt(p.Decision, opt, from.ID, from.FirstName), reply, force)
	if err != nil {
		return err
	}
	return b.store.Update(b.now(), func(s *stateData) {
		s.Notes[noteKey(sent.Chat.ID, sent.ID)] = noteRequest{Token: token, UserID: strconv.FormatInt(from.ID, 10), At: b.now()}
	})
}

// onReply takes a reply to a note prompt, from the admin who was asked.
// Other replies are none of the bot's business.
func (b *Bot) onReply(ctx context.Context, m *models.Message) {
	key := noteKey(m.Chat.ID, m.ReplyToMessage.ID)
	var (
		req noteRequest
		ok  bool
	)
	b.store.View(func(s *stateData) { req, ok = s.Notes[key] })
	if !ok || m.From == nil {
		return
	}
	user := strconv.FormatInt(m.From.ID, 10)
	if user != req.UserID || !b.isAdmin(user) {
		b.log.Warn("note reply ignored: not from the admin asked", "user", user, "asked", req.UserID)
		return
	}
	note := strings.TrimSpace(m.Text)
	if note == "" {
		b.reply(ctx, m, "A note is required: reply to my message again, with text.")
		return
	}
	if err := b.store.Update(b.now(), func(s *stateData) { delete(s.Notes, key) }); err != nil {
		b.log.Error("dropping note request", "err", err)
	}
	btn, p, found := b.store.Lookup(req.Token)
	switch {
	case !found:
		b.reply(ctx, m, "This decision is closed or unknown; your note was not used.")
	case p.Outcome != nil:
		b.reply(ctx, m, "⚠️ "+alreadyText(p.Decision, *p.Outcome))
	default:
		text, _ := b.decide(ctx, user, p.Decision, btn.Option, note)
		b.reply(ctx, m, text)
	}
}

func (b *Bot) reply(ctx context.Context, to *models.Message, text string) {
	_, err := b.send(ctx, Message{Text: esc(text)}, &models.ReplyParameters{MessageID: to.ID, AllowSendingWithoutReply: true}, nil)
	if err != nil {
		b.log.Error("replying", "err", err)
	}
}

// decide applies an admin's choice and edits the message at once; the
// workflow's decision_closed notice then finds it edited. It returns what
// to tell the admin, and whether it is a refusal.
func (b *Bot) decide(ctx context.Context, user string, d task.Decision, option, note string) (string, bool) {
	in := task.DecideInput{DecisionID: d.ID, Option: option, Note: note, By: workflows.TelegramAdmin(user), Channel: Channel}
	dctx, cancel := context.WithTimeout(ctx, b.decideTimeout)
	res, err := b.dec.Decide(dctx, d.TaskID, in)
	cancel()
	if err != nil {
		b.log.Info("decision refused", "decision", d.ID, "user", user, "option", option, "err", err)
		return refusalText(err), true
	}
	b.log.Info("decided", "decision", d.ID, "task", d.TaskID, "user", user, "option", option)
	o := res.Outcome
	if o.DecisionID == "" {
		o = task.Outcome{DecisionID: d.ID, Kind: d.Kind, Option: option, Note: note, By: in.By, Channel: Channel, At: b.now()}
	}
	if err := b.closeDecision(ctx, d, o); err != nil {
		b.log.Error("editing decided message", "decision", d.ID, "err", err)
	}
	return "✅ Recorded: " + optionLabel(d, option), false
}

func notAdminText(user string) string {
	return fmt.Sprintf("⛔ Only ampflow admins can decide. Ask one to add your Telegram user id (%s) to telegram.admins.", user)
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
		return clip("⚠️ "+te.Message, 200)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "ampflow did not answer in time; the message updates if the decision was recorded."
	}
	return "ampflow could not record the decision; try again, or use the CLI."
}
