package telegram

import (
	"fmt"
	"html"
	"strings"

	"github.com/go-telegram/bot/models"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Limits keep a message readable on a phone and well inside Telegram's
// 4096 characters.
const (
	maxDescription = 280
	maxItem        = 180
	maxItems       = 4
	maxNote        = 500
)

// Message is a rendered Telegram message: HTML text and its buttons.
type Message struct {
	Text     string
	Keyboard *models.InlineKeyboardMarkup
}

// ParseMode is the parse mode every rendered text is written in.
const ParseMode = models.ParseModeHTML

// esc escapes text for Telegram's HTML: only &, < and > need it (and
// quotes inside attributes, which html.EscapeString also covers).
func esc(s string) string { return html.EscapeString(s) }

// RenderDecision renders an open decision: the task, what happened, the
// suggested actions, and one button per option, one a row for thumbs.
// tokens[i] is the callback data of d.Options[i]; an option without a
// token gets no button.
func RenderDecision(d decision.Decision, tokens []string) Message {
	return RenderPost(d, tokens, chat.Post{})
}

// RenderPost is RenderDecision for a decision posted again: marked as a
// reminder, or as escalated with the escalation group mentioned.
func RenderPost(d decision.Decision, tokens []string, how chat.Post) Message {
	var rows [][]models.InlineKeyboardButton
	for i, o := range d.Options {
		if i >= len(tokens) || tokens[i] == "" {
			continue
		}
		rows = append(rows, []models.InlineKeyboardButton{{Text: chat.ButtonLabel(o), CallbackData: tokens[i]}})
	}
	state := "Decision"
	switch {
	case how.Escalated:
		state = "Escalated"
	case how.Reminder:
		state = "Reminder"
	}
	text := decisionBody(d, state)
	if line := postLine(d, how); line != "" {
		text = line + "\n\n" + text
	}
	if d.Required > 1 || len(d.Approvals) > 0 {
		text += "\n\n🗳️ " + esc(d.Progress().String())
	}
	m := Message{Text: text + "\n\n" + footer(d)}
	if len(rows) > 0 {
		m.Keyboard = &models.InlineKeyboardMarkup{InlineKeyboard: rows}
	}
	return m
}

// postLine says why a decision is posted again, and calls the escalation
// group: a mention by user id notifies them.
func postLine(d decision.Decision, how chat.Post) string {
	switch {
	case how.Escalated:
		line := "🚨 <b>Escalated</b>: nobody answered"
		if !d.RaisedAt.IsZero() {
			line += " since " + chat.Stamp(d.RaisedAt)
		}
		if len(how.Mention) > 0 {
			names := make([]string, len(how.Mention))
			for i, u := range how.Mention {
				names[i] = fmt.Sprintf(`<a href="tg://user?id=%s">%s</a>`, esc(u), esc(u))
			}
			line += ". " + strings.Join(names, " ") + ": you may decide it now."
		}
		return line
	case how.Reminder:
		return "⏰ <b>Reminder</b>: this decision is still waiting for an answer."
	}
	return ""
}

// RenderClosed renders a decided decision: the same body, who decided
// what, where and when, and an empty keyboard that removes the buttons.
func RenderClosed(d decision.Decision, o decision.Outcome) Message {
	var line string
	switch {
	case o.Option == decision.OptWithdrawn:
		line = "➖ <b>Withdrawn</b>: no longer needed"
	case o.Channel == decision.ChannelExpiry:
		line = fmt.Sprintf("⌛ <b>Expired</b>: nobody answered in time; <b>%s</b> applied by <code>%s</code>", esc(chat.OptionLabel(d, o.Option)), esc(o.By))
	default:
		line = fmt.Sprintf("%s <b>%s</b> by <code>%s</code> %s", chat.OutcomeMark(o.Option), esc(chat.OptionLabel(d, o.Option)), esc(o.By), esc(chat.Where(o.Channel)))
	}
	line += "\n" + chat.Stamp(o.At)
	if o.Note != "" {
		line += "\n<blockquote>" + esc(chat.Clip(o.Note, maxNote)) + "</blockquote>"
	}
	return Message{
		Text:     decisionBody(d, "Decided") + "\n\n" + line + "\n\n" + footer(d),
		Keyboard: &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}},
	}
}

func decisionBody(d decision.Decision, state string) string {
	if tc, ok := chat.ToolCallOf(d); ok {
		return toolBody(d, tc, state)
	}
	c := d.Context
	var b strings.Builder
	fmt.Fprintf(&b, "%s <b>%s · %s</b>\n", chat.RiskMark(c.Risk), state, esc(d.Subject))
	fmt.Fprintf(&b, "<b>%s</b>\n%s\n\n", chat.KindTitle(d.Kind), esc(chat.Clip(d.Prompt, maxDescription)))
	if !chat.ForTask(c) {
		b.WriteString("<b>Summary</b> " + esc(chat.Clip(c.Description, maxDescription)))
		for _, f := range chat.Facts(c, maxDescription) {
			b.WriteString("\n<b>" + esc(f.Label) + "</b> " + esc(f.Value))
		}
		b.WriteString("\n<b>Risk</b> " + esc(string(c.Risk)))
		return b.String()
	}
	b.WriteString("<b>Task</b> " + esc(chat.Clip(c.Description, maxDescription)))
	if c.Repo != "" {
		r := c.Repo
		if c.Branch != "" {
			r += "@" + c.Branch
		}
		b.WriteString("\n<b>Repo</b> <code>" + esc(r) + "</code>")
	}
	b.WriteString("\n<b>Risk</b> " + esc(string(c.Risk)))
	if c.Subtask != "" {
		b.WriteString(" · <b>Subtask</b> " + esc(c.Subtask))
	}
	fmt.Fprintf(&b, "\n<b>Rejects</b> %d", c.RejectCount)
	if c.CIState != "" {
		b.WriteString(" · <b>CI</b> " + esc(c.CIState))
	}
	if c.Confidence != nil {
		fmt.Fprintf(&b, " · <b>Confidence</b> %.2f", *c.Confidence)
	}
	if d.Escalation != nil {
		if e := d.Escalation.Escalation(); e != nil {
			b.WriteString("\n\n" + whatHappened(*d.Escalation, *e))
		}
	}
	if len(c.Issues) > 0 {
		lines := make([]string, len(c.Issues))
		for i, is := range c.Issues {
			lines[i] = issueLine(is)
		}
		b.WriteString("\n\n" + bullets("Reviewer issues", lines))
	}
	if len(c.Blockers) > 0 {
		b.WriteString("\n\n" + bullets("Blockers", escAll(c.Blockers)))
	}
	if len(c.Suggested) > 0 {
		b.WriteString("\n\n" + bullets("Suggested", escAll(c.Suggested)))
	}
	return b.String()
}

func whatHappened(m amp.Message, e amp.Escalation) string {
	head := fmt.Sprintf("<b>What happened</b> %s %s from %s", chat.SeverityMark(e.Severity), esc(string(e.EscalationType)), esc(string(e.TriggeredBy)))
	if m.From != "" && m.From != e.TriggeredBy {
		head += " (sent by " + esc(string(m.From)) + ")"
	}
	return head + "\n" + esc(chat.Clip(e.Description, maxDescription))
}

func footer(d decision.Decision) string {
	s := "<code>" + esc(d.ID) + "</code>"
	if !d.RaisedAt.IsZero() {
		s += " · raised " + chat.Stamp(d.RaisedAt)
	}
	if !d.ExpiresAt.IsZero() {
		s += " · expires " + chat.Stamp(d.ExpiresAt)
	}
	return s
}

// RenderEscalation renders an escalation that asks nothing: no buttons.
func RenderEscalation(m amp.Message) Message {
	e := m.Escalation()
	if e == nil {
		return Message{Text: "<b>Escalation</b> on <code>" + esc(m.TaskID) + "</code>"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s <b>Escalation · %s</b>\n", chat.SeverityMark(e.Severity), esc(m.TaskID))
	b.WriteString(whatHappened(m, *e))
	if len(e.SuggestedActions) > 0 {
		b.WriteString("\n\n" + bullets("Suggested", escAll(e.SuggestedActions)))
	}
	b.WriteString("\n\n<code>" + esc(m.MsgID) + "</code>")
	if e.AutoSuspended {
		b.WriteString(" · task suspended")
	}
	return Message{Text: b.String()}
}

// RenderStatus renders a status notice as one line.
func RenderStatus(in notify.Input) Message {
	s := fmt.Sprintf("<code>%s</code> is now <b>%s</b>", esc(in.TaskID), esc(strings.ReplaceAll(string(in.Status), "_", " ")))
	if in.Text != "" {
		s += ": " + esc(chat.Clip(in.Text, maxDescription))
	}
	return Message{Text: s}
}

// RenderNotePrompt renders the request for the note an option requires.
// It mentions the admin who chose it: with a selective force-reply, only
// they get the reply field.
func RenderNotePrompt(d decision.Decision, o decision.Option, userID int64, name string) Message {
	if name == "" {
		name = "Admin"
	}
	return Message{Text: fmt.Sprintf("✍️ <a href=\"tg://user?id=%d\">%s</a>, reply to this message with your note for <b>%s</b> on <code>%s</code>.",
		userID, esc(name), esc(chat.OptionLabel(d, o.ID)), esc(d.Subject))}
}

func issueLine(i amp.Issue) string {
	where := i.File
	if where != "" && i.Line > 0 {
		where = fmt.Sprintf("%s:%d", i.File, i.Line)
	}
	line := chat.SeverityMark(i.Severity) + " " + esc(string(i.Severity))
	if where != "" {
		line += " <code>" + esc(where) + "</code>"
	}
	return line + " " + esc(chat.Clip(i.Description, maxItem))
}

func bullets(title string, lines []string) string {
	var b strings.Builder
	b.WriteString("<b>" + title + "</b>")
	for i, l := range lines {
		if i == maxItems {
			fmt.Fprintf(&b, "\n<i>+%d more</i>", len(lines)-maxItems)
			break
		}
		b.WriteString("\n• " + l)
	}
	return b.String()
}

func escAll(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = esc(chat.Clip(s, maxItem))
	}
	return out
}
