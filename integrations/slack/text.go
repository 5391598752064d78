package slack

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/task"
)

// Limits keep a message readable on a phone and inside Slack's block
// limits (3000 characters a section).
const (
	maxDescription = 280
	maxItem        = 200
	maxItems       = 5
	maxNote        = 500
)

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// esc escapes text for mrkdwn. Slack has no escape for *, _ or ~, so those
// stay as they are.
func esc(s string) string { return mrkdwnEscaper.Replace(s) }

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

func kindTitle(k task.DecisionKind) string {
	s := strings.ReplaceAll(string(k), "_", " ")
	if s == "" {
		return "Decision"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func riskMark(r amp.Risk) string {
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

func severityMark(s amp.Severity) string {
	switch s {
	case amp.SeverityCritical:
		return "🔴"
	case amp.SeverityMajor, amp.SeverityWarning:
		return "🟠"
	}
	return "⚪"
}

func outcomeMark(option string) string {
	switch option {
	case task.OptApprove, task.OptAccept, task.OptResume:
		return "✅"
	case task.OptReject, task.OptTerminate:
		return "⛔"
	case task.OptWithdrawn:
		return "➖"
	}
	return "☑️"
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func repoAt(c task.DecisionContext) string {
	if c.Branch == "" {
		return c.Repo
	}
	return c.Repo + "@" + c.Branch
}

func optionLabel(d task.Decision, id string) string {
	if o, ok := d.Option(id); ok && o.Label != "" {
		return o.Label
	}
	return id
}

// who renders an admin identity, as a mention when it is a Slack user.
func who(by string) string {
	if id, ok := strings.CutPrefix(by, "slack:"); ok && id != "" {
		return "<@" + esc(id) + ">"
	}
	return "`" + esc(by) + "`"
}

func issueLine(i amp.Issue) string {
	where := i.File
	if where != "" && i.Line > 0 {
		where = fmt.Sprintf("%s:%d", i.File, i.Line)
	}
	line := severityMark(i.Severity) + " " + string(i.Severity)
	if where != "" {
		line += " `" + esc(where) + "`"
	}
	return line + " " + esc(clip(i.Description, maxItem))
}

// bullets lists at most maxItems lines, then how many were left out.
func bullets(title string, lines []string) string {
	var b strings.Builder
	b.WriteString("*" + title + "*")
	for i, l := range lines {
		if i == maxItems {
			fmt.Fprintf(&b, "\n_+%d more_", len(lines)-maxItems)
			break
		}
		b.WriteString("\n• " + l)
	}
	return b.String()
}

func escAll(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = esc(clip(s, maxItem))
	}
	return out
}
