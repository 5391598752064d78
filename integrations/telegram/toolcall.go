package telegram

import (
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Bounds of a tool call's command or diff, well inside a message's 4096
// characters with the rest of the decision around it.
const (
	maxToolLines = 30
	maxToolRunes = 1800
	maxToolBlock = 2400
)

// toolBody renders a tool_call decision: who wants to run what, the
// command or the file and its diff, where, the rule that asked and why,
// the quorum and the answers it takes.
func toolBody(d decision.Decision, c chat.ToolCall, state string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s <b>%s · %s</b>\n", chat.RiskMark(d.Context.Risk), state, esc(d.Subject))
	who := c.Who()
	fmt.Fprintf(&b, "<b>Tool call</b> · <code>%s</code> wants to run <code>%s</code> (%s)\n\n",
		esc(chat.Clip(who, maxItem)), esc(chat.Clip(c.Tool, maxItem)), esc(c.Kind))
	switch {
	case c.Command != "":
		b.WriteString("<b>Command</b>\n" + preBlock(c.Command, "bash") + "\n")
	case c.Excerpt != "":
		if c.Path != "" {
			b.WriteString("<b>File</b> <code>" + esc(chat.Clip(c.Path, maxItem)) + "</code>\n")
		}
		b.WriteString(preBlock(c.Excerpt, "diff") + "\n")
	case c.Input != "":
		b.WriteString("<b>Input</b>\n" + preBlock(c.Input, "json") + "\n")
	}
	if c.CWD != "" {
		b.WriteString("<b>Directory</b> <code>" + esc(chat.Clip(c.CWD, maxItem)) + "</code>\n")
	}
	if c.Rule != "" {
		b.WriteString("<b>Rule</b> <code>" + esc(c.Rule) + "</code>")
	} else {
		b.WriteString("<b>Rule</b> tools.default")
	}
	if c.Reason != "" {
		b.WriteString(" — " + esc(chat.Clip(c.Reason, maxDescription)))
	}
	b.WriteString("\n")
	if c.Risk != "" {
		b.WriteString("<b>Risk</b> " + esc(c.Risk) + " · ")
	}
	b.WriteString("<b>Quorum</b> " + chat.Quorum(d))
	if desc := d.Context.Description; desc != "" {
		b.WriteString("\n<b>Task</b> " + esc(chat.Clip(desc, maxDescription)))
	}
	b.WriteString("\n<b>Options</b> " + esc(chat.ToolOptionsText))
	return b.String()
}

// preBlock is s as preformatted code, escaped and bounded.
func preBlock(s, lang string) string {
	s = chat.ClipBlock(s, maxToolLines, maxToolRunes)
	return chat.Fit(s, maxToolBlock, func(s string) string {
		return `<pre><code class="language-` + lang + `">` + esc(s) + "</code></pre>"
	})
}
