package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// Clip shortens s, trimmed, to n runes, marking the cut.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// KindTitle names a decision kind for a heading: "Plan approval".
func KindTitle(k decision.Kind) string {
	s := strings.ReplaceAll(string(k), "_", " ")
	if s == "" {
		return "Decision"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// RiskMark is the coloured dot of a risk level.
func RiskMark(r amp.Risk) string {
	switch r {
	case amp.RiskLow:
		return "🟢"
	case amp.RiskMedium:
		return "🟠"
	case amp.RiskHigh:
		return "🔴"
	}
	return "⚪"
}

// SeverityMark is the coloured dot of a severity.
func SeverityMark(s amp.Severity) string {
	switch s {
	case amp.SeverityCritical:
		return "🔴"
	case amp.SeverityMajor, amp.SeverityWarning:
		return "🟠"
	}
	return "⚪"
}

// OutcomeMark is the sign before a chosen option.
func OutcomeMark(option string) string {
	switch option {
	case decision.OptApprove, task.OptAccept, task.OptResume, task.OptAllowOnce, task.OptAllowTool, task.OptAllowRepo:
		return "✅"
	case decision.OptReject, task.OptTerminate, task.OptDeny:
		return "⛔"
	case decision.OptWithdrawn:
		return "➖"
	}
	return "☑️"
}

// Stamp writes a time the way every message shows it, in UTC.
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// OptionLabel is the label of d's option id, or the id when it has none.
func OptionLabel(d decision.Decision, id string) string {
	if o, ok := d.Option(id); ok && o.Label != "" {
		return o.Label
	}
	return id
}

// OptionName is o's label, or its id when it has none.
func OptionName(o decision.Option) string {
	if o.Label == "" {
		return o.ID
	}
	return o.Label
}

// ButtonLabel is the text of o's button: its name, marked when the
// option asks for a note.
func ButtonLabel(o decision.Option) string {
	if o.NoteRequired {
		return OptionName(o) + " ✍️"
	}
	return OptionName(o)
}

// Texts an admin reads when a button or a note cannot decide.
const (
	StaleButtonText = "This button is no longer valid: its decision is closed or unknown."
	StaleOptionText = "This option is not offered any more."
	StaleNoteText   = "This decision is closed or unknown; your note was not used."
	// ChangedText: what the decision asks changed after its message was
	// posted (its digest is no longer what the button carries).
	ChangedText      = "⚠️ This decision changed after it was posted; your answer was not recorded."
	refusedSlowText  = "ampflow did not answer in time; the message updates if the decision was recorded."
	refusedOtherText = "ampflow could not record the decision; try again, or use the CLI."
)

// channelDashboard is the channel of answers given on the dashboard.
const channelDashboard = "dashboard"

// Where says where an answer was given: "on the dashboard", "via slack".
func Where(channel string) string {
	if channel == channelDashboard {
		return "on the dashboard"
	}
	return "via " + channel
}

// AlreadyText tells who decided d, how, where and when.
func AlreadyText(d decision.Decision, o decision.Outcome) string {
	if len(o.Approvers) > 1 {
		by := make([]string, len(o.Approvers))
		for i, a := range o.Approvers {
			by[i] = fmt.Sprintf("%s %s at %s", a.By, Where(a.Channel), Stamp(a.At))
		}
		return fmt.Sprintf("Already decided: %s by %s.", OptionLabel(d, o.Option), strings.Join(by, ", "))
	}
	return fmt.Sprintf("Already decided: %s by %s %s at %s.", OptionLabel(d, o.Option), o.By, Where(o.Channel), Stamp(o.At))
}

// NotAdminText tells a user who is not an admin how to become one;
// platform is the platform's name ("Slack"), key its config section.
func NotAdminText(platform, key, user string) string {
	return fmt.Sprintf("⛔ Only ampflow admins can decide. Ask one to add your %s user id (%s) to %s.admins.", platform, user, key)
}

// RefusalText is what the clicker reads when the workflow refuses: its own
// plain message ("… already decided by X via Y at T"), or a generic line
// when the cause is internal.
func RefusalText(err error) string {
	var te *task.Error
	if errors.As(err, &te) && te.Code != task.CodeInternal && te.Code != task.CodeUnavailable {
		return "⚠️ " + te.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return refusedSlowText
	}
	return refusedOtherText
}
