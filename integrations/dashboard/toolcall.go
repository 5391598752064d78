package dashboard

import (
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Bounds of a tool call's command or diff on a card.
const (
	maxToolLines = 60
	maxToolRunes = 4000
)

// toolView is what a tool_call decision asks: who wants to run which
// tool, the command or the file and its diff, where, and the rule that
// asked. The template escapes it.
type toolView struct {
	Who, Tool, Kind, Command, Path, Excerpt, Input string
	CWD, Rule, Reason, Risk, Quorum                string
}

func newToolView(d decision.Decision) *toolView {
	c, ok := chat.ToolCallOf(d)
	if !ok {
		return nil
	}
	v := &toolView{Who: c.Who(), Tool: c.Tool, Kind: c.Kind, Path: c.Path, CWD: c.CWD, Rule: c.Rule, Reason: c.Reason, Risk: c.Risk,
		Quorum: chat.Quorum(d)}
	if v.Rule == "" {
		v.Rule = "tools.default"
	}
	clip := func(s string) string {
		if s == "" {
			return ""
		}
		return chat.ClipBlock(s, maxToolLines, maxToolRunes)
	}
	v.Command, v.Excerpt, v.Input = clip(c.Command), clip(c.Excerpt), clip(c.Input)
	return v
}
