package slack

import (
	"fmt"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Block and action ids the bot recognises in interactions. They only
// route; what a click means comes from the server-side token.
const (
	actionsBlockID = "ampflow_options"
	noteCallbackID = "ampflow_note"
	noteBlockID    = "note"
	noteActionID   = "note_text"
)

func mrkdwn(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.MarkdownType, s, false, false)
}

func plain(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.PlainTextType, s, true, false)
}

func section(s string) slackapi.Block { return slackapi.NewSectionBlock(mrkdwn(s), nil, nil) }

// RenderDecision renders an open decision as Block Kit: the task, what
// happened, the suggested actions and one button per option. tokens[i]
// is the button value of d.Options[i]; a missing token leaves the option
// out, so nothing unrecorded can be clicked.
func RenderDecision(d decision.Decision, tokens []string) []slackapi.Block {
	return RenderPost(d, tokens, chat.Post{})
}

// RenderPost is RenderDecision for a decision posted again: marked as a
// reminder, or as escalated with the escalation group mentioned.
func RenderPost(d decision.Decision, tokens []string, how chat.Post) []slackapi.Block {
	state := "Decision"
	switch {
	case how.Escalated:
		state = "Escalated"
	case how.Reminder:
		state = "Reminder"
	}
	blocks := decisionBody(d, state)
	if line := postLine(d, how); line != "" {
		blocks = append(blocks[:1], append([]slackapi.Block{section(line)}, blocks[1:]...)...)
	}
	if d.Required > 1 || len(d.Approvals) > 0 {
		blocks = append(blocks, section("🗳️ "+esc(d.Progress().String())))
	}
	var buttons []slackapi.BlockElement
	for i, o := range d.Options {
		if i >= len(tokens) || tokens[i] == "" {
			continue
		}
		btn := slackapi.NewButtonBlockElement("ampflow_opt_"+o.ID, tokens[i], plain(chat.Clip(chat.ButtonLabel(o), 70)))
		switch o.ID {
		case decision.OptApprove, task.OptAccept, task.OptResume, task.OptAllowOnce:
			btn = btn.WithStyle(slackapi.StylePrimary)
		case decision.OptReject, task.OptTerminate, task.OptDeny:
			btn = btn.WithStyle(slackapi.StyleDanger)
		}
		buttons = append(buttons, btn)
	}
	if len(buttons) > 0 {
		blocks = append(blocks, slackapi.NewActionBlock(actionsBlockID, buttons...))
	}
	return append(blocks, footer(d))
}

// postLine says why a decision is posted again, and calls the escalation
// group by name.
func postLine(d decision.Decision, how chat.Post) string {
	switch {
	case how.Escalated:
		line := "🚨 *Escalated*: nobody answered"
		if !d.RaisedAt.IsZero() {
			line += " since " + chat.Stamp(d.RaisedAt)
		}
		if len(how.Mention) > 0 {
			ids := make([]string, len(how.Mention))
			for i, u := range how.Mention {
				ids[i] = "<@" + esc(u) + ">"
			}
			line += ". " + strings.Join(ids, " ") + ": you may decide it now."
		}
		return line
	case how.Reminder:
		return "⏰ *Reminder*: this decision is still waiting for an answer."
	}
	return ""
}

// RenderClosed renders a decided decision: the same body without buttons,
// and who decided what, where and when.
func RenderClosed(d decision.Decision, o decision.Outcome) []slackapi.Block {
	blocks := decisionBody(d, "Decided")
	var line string
	switch {
	case o.Option == decision.OptWithdrawn:
		line = "➖ *Withdrawn*: no longer needed"
	case o.Channel == decision.ChannelExpiry:
		line = fmt.Sprintf("⌛ *Expired*: nobody answered in time; *%s* applied by %s", esc(chat.OptionLabel(d, o.Option)), who(o.By))
	default:
		line = fmt.Sprintf("%s *%s* by %s %s", chat.OutcomeMark(o.Option), esc(chat.OptionLabel(d, o.Option)), who(o.By), esc(chat.Where(o.Channel)))
	}
	line += "\n" + chat.Stamp(o.At)
	if o.Note != "" {
		line += "\n> " + strings.ReplaceAll(esc(chat.Clip(o.Note, maxNote)), "\n", "\n> ")
	}
	blocks = append(blocks, slackapi.NewDividerBlock(), section(line))
	return append(blocks, footer(d))
}

// DecisionText is the notification text of a decision message, shown
// where blocks are not (push notifications).
func DecisionText(d decision.Decision) string {
	return esc(fmt.Sprintf("%s on %s: %s", chat.KindTitle(d.Kind), d.Subject, chat.Clip(chat.Prompt(d), 120)))
}

// PostText is DecisionText for a decision posted again; an escalation
// mentions its group, so their clients notify them.
func PostText(d decision.Decision, how chat.Post) string {
	switch {
	case how.Escalated:
		s := "Escalated: " + DecisionText(d)
		for _, u := range how.Mention {
			s += " <@" + esc(u) + ">"
		}
		return s
	case how.Reminder:
		return "Reminder: " + DecisionText(d)
	}
	return DecisionText(d)
}

// ClosedText is the notification text of a decided decision.
func ClosedText(d decision.Decision, o decision.Outcome) string {
	return esc(fmt.Sprintf("%s on %s: %s by %s", chat.KindTitle(d.Kind), d.Subject, chat.OptionLabel(d, o.Option), o.By))
}

func decisionBody(d decision.Decision, state string) []slackapi.Block {
	if tc, ok := chat.ToolCallOf(d); ok {
		return toolBody(d, tc, state)
	}
	c := d.Context
	head := fmt.Sprintf("%s %s · %s", chat.RiskMark(c.Risk), state, d.Subject)
	blocks := []slackapi.Block{
		slackapi.NewHeaderBlock(plain(chat.Clip(head, 150))),
		section("*" + chat.KindTitle(d.Kind) + "*\n" + esc(chat.Clip(d.Prompt, maxDescription))),
	}
	var t []string
	if !chat.ForTask(c) {
		t = append(t, "*Summary* "+esc(chat.Clip(c.Description, maxDescription)))
		for _, f := range chat.Facts(c, maxDescription) {
			t = append(t, "*"+esc(f.Label)+"* "+esc(f.Value))
		}
		t = append(t, "*Risk* "+string(c.Risk))
		return append(blocks, section(strings.Join(t, "\n")))
	}
	t = append(t, "*Task* "+esc(chat.Clip(c.Description, maxDescription)))
	if r := repoAt(c); r != "" {
		t = append(t, "*Repo* `"+esc(r)+"`")
	}
	risk := "*Risk* " + string(c.Risk)
	if c.Subtask != "" {
		risk += " · *Subtask* " + esc(c.Subtask)
	}
	t = append(t, risk)
	state2 := fmt.Sprintf("*Rejects* %d", c.RejectCount)
	if c.CIState != "" {
		state2 += " · *CI* " + esc(c.CIState)
	}
	if c.Confidence != nil {
		state2 += fmt.Sprintf(" · *Confidence* %.2f", *c.Confidence)
	}
	t = append(t, state2)
	blocks = append(blocks, section(strings.Join(t, "\n")))

	if d.Escalation != nil {
		if e := d.Escalation.Escalation(); e != nil {
			blocks = append(blocks, section(whatHappened(*d.Escalation, *e)))
		}
	}
	if len(c.Issues) > 0 {
		lines := make([]string, len(c.Issues))
		for i, is := range c.Issues {
			lines[i] = issueLine(is)
		}
		blocks = append(blocks, section(bullets("Reviewer issues", lines)))
	}
	if len(c.Blockers) > 0 {
		blocks = append(blocks, section(bullets("Blockers", escAll(c.Blockers))))
	}
	if len(c.Suggested) > 0 {
		blocks = append(blocks, section(bullets("Suggested", escAll(c.Suggested))))
	}
	return blocks
}

func whatHappened(m amp.Message, e amp.Escalation) string {
	head := fmt.Sprintf("*What happened* %s %s from %s", chat.SeverityMark(e.Severity), esc(string(e.EscalationType)), esc(string(e.TriggeredBy)))
	if m.From != "" && m.From != e.TriggeredBy {
		head += " (sent by " + esc(string(m.From)) + ")"
	}
	return head + "\n" + esc(chat.Clip(e.Description, maxDescription))
}

func footer(d decision.Decision) slackapi.Block {
	s := "`" + esc(d.ID) + "`"
	if !d.RaisedAt.IsZero() {
		s += " · raised " + chat.Stamp(d.RaisedAt)
	}
	if !d.ExpiresAt.IsZero() {
		s += " · expires " + chat.Stamp(d.ExpiresAt)
	}
	return slackapi.NewContextBlock("", mrkdwn(s))
}

// RenderEscalation renders an escalation that asks nothing of the admins:
// no buttons.
func RenderEscalation(m amp.Message) []slackapi.Block {
	e := m.Escalation()
	if e == nil {
		return []slackapi.Block{section(fmt.Sprintf("*Escalation* on %s", esc(m.TaskID)))}
	}
	blocks := []slackapi.Block{
		slackapi.NewHeaderBlock(plain(chat.Clip(fmt.Sprintf("%s Escalation · %s", chat.SeverityMark(e.Severity), m.TaskID), 150))),
		section(whatHappened(m, *e)),
	}
	if len(e.SuggestedActions) > 0 {
		blocks = append(blocks, section(bullets("Suggested", escAll(e.SuggestedActions))))
	}
	ctx := "`" + esc(m.MsgID) + "`"
	if e.AutoSuspended {
		ctx += " · task suspended"
	}
	return append(blocks, slackapi.NewContextBlock("", mrkdwn(ctx)))
}

// EscalationText is the notification text of an escalation.
func EscalationText(m amp.Message) string {
	if e := m.Escalation(); e != nil {
		return esc(fmt.Sprintf("Escalation on %s: %s", m.TaskID, chat.Clip(e.Description, 120)))
	}
	return "Escalation on " + esc(m.TaskID)
}

// RenderStatus renders a status notice as one plain mrkdwn line.
func RenderStatus(in notify.Input) string {
	s := fmt.Sprintf("`%s` is now *%s*", esc(in.TaskID), esc(strings.ReplaceAll(string(in.Status), "_", " ")))
	if in.Text != "" {
		s += ": " + esc(chat.Clip(in.Text, maxDescription))
	}
	return s
}

// RenderNoteModal renders the modal that asks for the note an option
// requires. token is carried back in private_metadata.
func RenderNoteModal(d decision.Decision, o decision.Option, token string) slackapi.ModalViewRequest {
	label := chat.OptionName(o)
	input := slackapi.NewPlainTextInputBlockElement(plain("Why, and what should happen next"), noteActionID)
	input.Multiline = true
	input = input.WithMaxLength(2000)
	return slackapi.ModalViewRequest{
		Type:            slackapi.VTModal,
		CallbackID:      noteCallbackID,
		PrivateMetadata: token,
		Title:           plain(chat.Clip(label, 24)),
		Submit:          plain("Decide"),
		Close:           plain("Cancel"),
		Blocks: slackapi.Blocks{BlockSet: []slackapi.Block{
			section(fmt.Sprintf("*%s* on `%s`\n%s", esc(label), esc(d.Subject), esc(chat.Clip(chat.Prompt(d), maxDescription)))),
			slackapi.NewInputBlock(noteBlockID, plain("Note"), nil, input),
		}},
	}
}
