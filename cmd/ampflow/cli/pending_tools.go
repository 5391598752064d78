package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
)

// Bounds of a tool call's command or diff under ampflow pending.
const (
	maxToolLines = 20
	maxToolRunes = 1500
)

// printToolCalls writes, under the table, what each tool_call decision
// asks: who runs which tool where, the rule, its risk and the quorum, and the command
// or the file and its diff, indented. Control characters of the agent's
// text are shown escaped, so it cannot move the cursor or recolour the
// terminal.
func printToolCalls(w io.Writer, ds []decision.Decision) error {
	for _, d := range ds {
		c, ok := chat.ToolCallOf(d)
		if !ok {
			continue
		}
		who := c.Who()
		rule := c.Rule
		if rule == "" {
			rule = "tools.default"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "\n%s (%s): %s wants to run %s (%s)", d.ID, d.Subject, safe(who), safe(c.Tool), safe(c.Kind))
		if c.CWD != "" {
			fmt.Fprintf(&b, " in %s", safe(c.CWD))
		}
		fmt.Fprintf(&b, "\n  rule %s", safe(rule))
		if c.Reason != "" {
			fmt.Fprintf(&b, ": %s", safe(clip(c.Reason, 200)))
		}
		if c.Risk != "" {
			fmt.Fprintf(&b, "; risk %s", safe(c.Risk))
		}
		fmt.Fprintf(&b, "; quorum %s; --option allow_once, allow_tool or deny (with --note)\n", chat.Quorum(d))
		block := c.Input
		switch {
		case c.Command != "":
			block = "$ " + c.Command
		case c.Excerpt != "":
			block = c.Excerpt
			if c.Path != "" {
				fmt.Fprintf(&b, "  file %s\n", safe(c.Path))
			}
		}
		for _, l := range strings.Split(chat.ClipBlock(block, maxToolLines, maxToolRunes), "\n") {
			b.WriteString("  | " + safe(l) + "\n")
		}
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// safe shows s's control characters (ESC, CR, …) quoted, tabs as spaces.
func safe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
