package slack

import (
	"fmt"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Bounds of a tool call's command or diff: a section holds 3000
// characters, escaping included.
const (
	maxToolLines   = 40
	maxToolRunes   = 2400
	maxToolSection = 2900
)

// toolBody renders a tool_call decision: who wants to run what, the
// command or the file and its diff, where, the rule that asked and why,
// the quorum and the answers it takes.
func toolBody(d decision.Decision, c chat.ToolCall, state string) []slackapi.Block {
	head := fmt.Sprintf("%s %s · %s", chat.RiskMark(d.Context.Risk), state, d.Subject)
	who := c.Who()
	blocks := []slackapi.Block{
		slackapi.NewHeaderBlock(plain(chat.Clip(head, 150))),
		section(fmt.Sprintf("*Tool call* · `%s` wants to run `%s` (%s)", esc(chat.Clip(who, maxItem)), esc(chat.Clip(c.Tool, maxItem)), esc(c.Kind))),
	}
	switch {
	case c.Command != "":
		blocks = append(blocks, section(codeBlock("*Command*", c.Command)))
	case c.Excerpt != "":
		title := "*Change*"
		if c.Path != "" {
			title = "*File* `" + esc(chat.Clip(c.Path, maxItem)) + "`"
		}
		blocks = append(blocks, section(codeBlock(title, c.Excerpt)))
	case c.Input != "":
		blocks = append(blocks, section(codeBlock("*Input*", c.Input)))
	}
	var t []string
	if c.CWD != "" {
		t = append(t, "*Directory* `"+esc(chat.Clip(c.CWD, maxItem))+"`")
	}
	rule := "*Rule* `" + esc(c.Rule) + "`"
	if c.Rule == "" {
		rule = "*Rule* tools.default"
	}
	if c.Reason != "" {
		rule += " — " + esc(chat.Clip(c.Reason, maxDescription))
	}
	t = append(t, rule)
	q := "*Quorum* " + chat.Quorum(d)
	if c.Risk != "" {
		q = "*Risk* " + esc(c.Risk) + " · " + q
	}
	t = append(t, q)
	if desc := d.Context.Description; desc != "" {
		t = append(t, "*Task* "+esc(chat.Clip(desc, maxDescription)))
	}
	t = append(t, "*Options* "+chat.ToolOptionsText)
	return append(blocks, section(strings.Join(t, "\n")))
}

// codeBlock is a title over s in a code block, escaped and bounded to a
// section. A ``` inside s would close the block: a zero-width space
// breaks it.
func codeBlock(title, s string) string {
	s = chat.ClipBlock(s, maxToolLines, maxToolRunes)
	return chat.Fit(s, maxToolSection, func(s string) string {
		return title + "\n```\n" + esc(strings.ReplaceAll(s, "```", "`\u200b``")) + "\n```"
	})
}
