package slack

import (
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
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

func repoAt(c decision.Context) string {
	if c.Branch == "" {
		return c.Repo
	}
	return c.Repo + "@" + c.Branch
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
	line := chat.SeverityMark(i.Severity) + " " + string(i.Severity)
	if where != "" {
		line += " `" + esc(where) + "`"
	}
	return line + " " + esc(chat.Clip(i.Description, maxItem))
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
		out[i] = esc(chat.Clip(s, maxItem))
	}
	return out
}
