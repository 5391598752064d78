package chat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config/toolpolicy"
)

// ToolCall is what a tool_call decision asks, read from its context
// (the task puts the call's tool, kind, input, directory, rule and reason
// in Context.Extra): the command a shell tool would run, or the file an
// edit or write names and what it would change. Untrusted text, to escape
// for each channel's markup.
type ToolCall struct {
	ID, Tool, Kind, Agent, CWD, Rule, Reason, Risk string
	// Role and CLI are the run that asked: executor and codex.
	Role, CLI string
	// Command is a shell tool's command line.
	Command string
	// Path is the file (or, for a patch, the files) an edit or write
	// names; Excerpt is what it changes: "- " lines removed, "+ " lines
	// added, or the patch as the CLI gave it.
	Path    string
	Excerpt string
	// Input is the tool's input as canonical JSON when it is neither a
	// shell command nor an edit.
	Input string
}

// Who names who asked: "executor (codex)", or the agent's name where
// the ask names no role (task.Asker).
func (c ToolCall) Who() string { return task.Asker(amp.Role(c.Role), c.CLI, c.Agent) }

// ToolCallOf reads a tool_call decision; ok is false for any other kind.
// Secrets the text is seen to carry (bearer tokens, API keys) are masked.
func ToolCallOf(d decision.Decision) (ToolCall, bool) {
	if d.Kind != task.KindToolCall {
		return ToolCall{}, false
	}
	x := d.Context.Extra
	str := func(k string) string { s, _ := x[k].(string); return s }
	c := ToolCall{ID: str("tool_call"), Tool: str("tool"), Kind: str("kind"), Agent: str("agent"), CWD: str("cwd"),
		Rule: str("rule"), Reason: str("reason"), Risk: str("risk"), Role: str("role"), CLI: str("cli")}
	raw := str("input")
	var in map[string]any
	if json.Unmarshal([]byte(raw), &in) != nil {
		in = nil
	}
	field := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := in[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	if dir := field("workdir", "dir_path"); dir != "" && c.CWD == "" {
		c.CWD = dir
	}
	switch {
	case in == nil:
		c.Input = raw
	case c.Kind == "shell":
		c.Command = field("command", "cmd")
		if argv, ok := in["command"].([]any); ok {
			c.Command = shellLine(argv)
		}
	case c.Kind == "edit":
		c.Path = field("file_path", "filePath", "notebook_path", "path")
		c.Excerpt = editExcerpt(in)
		if c.Excerpt == "" {
			if p := patchText(in); p != "" {
				c.Excerpt = p
				c.Path = strings.Join(toolpolicy.PatchFiles(p), ", ")
			}
		}
	}
	if c.Command == "" && c.Excerpt == "" {
		c.Input = raw
	}
	c.Command, c.Excerpt, c.Input = MaskSecrets(c.Command), MaskSecrets(c.Excerpt), MaskSecrets(c.Input)
	return c, true
}

// shellLine reads an argv ("bash", "-lc", "…") as the line it runs.
func shellLine(argv []any) string {
	parts := make([]string, 0, len(argv))
	for _, a := range argv {
		s, _ := a.(string)
		parts = append(parts, s)
	}
	if len(parts) == 3 && (parts[1] == "-c" || parts[1] == "-lc") {
		return parts[2]
	}
	return strings.Join(parts, " ")
}

// editExcerpt renders an edit or a write as diff lines: Claude Code's
// Edit, MultiEdit, Write and NotebookEdit, Gemini CLI's replace and
// write_file, OpenCode's edit, multiedit and write.
func editExcerpt(in map[string]any) string {
	var b strings.Builder
	pair := func(m map[string]any) {
		old, _ := m["old_string"].(string)
		if old == "" {
			old, _ = m["oldString"].(string)
		}
		nu, ok := m["new_string"].(string)
		if !ok {
			nu, ok = m["newString"].(string)
		}
		if old == "" && !ok {
			return
		}
		diffLines(&b, "- ", old)
		diffLines(&b, "+ ", nu)
	}
	pair(in)
	if edits, ok := in["edits"].([]any); ok {
		for _, e := range edits {
			if m, ok := e.(map[string]any); ok {
				pair(m)
			}
		}
	}
	for _, k := range []string{"content", "new_source"} {
		if s, ok := in[k].(string); ok {
			diffLines(&b, "+ ", s)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func diffLines(b *strings.Builder, mark, s string) {
	if s == "" {
		return
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(mark + l + "\n")
	}
}

// patchText is the patch of Codex's apply_patch or OpenCode's patch.
func patchText(in map[string]any) string {
	for _, k := range []string{"patchText", "patch", "input", "command"} {
		switch v := in[k].(type) {
		case string:
			if strings.Contains(v, "*** ") {
				return v
			}
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok && strings.Contains(s, "*** ") {
					return s
				}
			}
		}
	}
	return ""
}

// ToolOptionsText names the three answers a tool_call decision offers.
const ToolOptionsText = "Allow once · Allow this tool for the rest of the task · Deny (a note, told to the agent, is required)"

// Quorum says how many admins must allow: "1 admin", "2 admins".
func Quorum(d decision.Decision) string {
	n := max(d.Required, 1)
	if n == 1 {
		return "1 admin"
	}
	return fmt.Sprintf("%d admins", n)
}

// ClipBlock bounds a block of text (a command, a diff) to maxLines lines
// and maxRunes runes, keeping its indentation, and says what it left out.
func ClipBlock(s string, maxLines, maxRunes int) string {
	lines := strings.Split(s, "\n")
	cut := 0
	if len(lines) > maxLines {
		cut, lines = len(lines)-maxLines, lines[:maxLines]
	}
	out := strings.Join(lines, "\n")
	if utf8.RuneCountInString(out) > maxRunes {
		r := []rune(out)[:maxRunes]
		rest := strings.Count(string([]rune(out)[maxRunes:]), "\n")
		out, cut = string(r)+"…", cut+rest
	}
	if cut > 0 {
		out += fmt.Sprintf("\n… %d more lines", cut)
	}
	return out
}

// Fit shrinks s until render(s) is at most limit bytes: a bound on the
// rendered text, whatever its escaping adds.
func Fit(s string, limit int, render func(string) string) string {
	out := render(s)
	r := []rune(s)
	for n := len(r); len(out) > limit && n > 0; {
		n = n * 3 / 4
		out = render(string(r[:n]) + "…")
	}
	return out
}

// secretShapes are secrets a command or a file may carry, by their form.
var secretShapes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(authorization:\s*(?:bearer|basic|token)\s+)[^\s'"]+`),
	regexp.MustCompile(`(?i)((?:password|passwd|secret|token|api[_-]?key)"?\s*[=:]\s*['"]?)[^\s'"&,}]{4,}`),
	regexp.MustCompile(`()\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})`),
}

// MaskSecrets replaces what looks like a secret in s with "***".
func MaskSecrets(s string) string {
	for _, re := range secretShapes {
		s = re.ReplaceAllString(s, "${1}***")
	}
	return s
}

// Prompt is d's question as a channel shows it: a tool_call decision's
// carries the agent's input, with what looks like a secret masked.
func Prompt(d decision.Decision) string {
	if d.Kind == task.KindToolCall {
		return MaskSecrets(d.Prompt)
	}
	return d.Prompt
}
