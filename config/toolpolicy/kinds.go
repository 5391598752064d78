package toolpolicy

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
)

// Kind is what a tool does, whatever the CLI calls it.
type Kind string

// Kinds of tools.
const (
	Shell Kind = "shell" // runs a command
	Edit  Kind = "edit"  // writes, edits, patches or deletes a file
	Read  Kind = "read"  // reads, lists or searches files
	Fetch Kind = "fetch" // reaches the network (fetch a page, search)
	MCP   Kind = "mcp"   // a tool of an MCP server
	// Network is a connection a sandboxed run opens through ampflow's
	// egress proxy to a host neither its model API nor
	// sandbox.network.allow names: CLI "egress", tool "connect", input
	// {"host": …, "port": …}.
	Network Kind = "network"
	Other   Kind = "other" // anything else (todo lists, sub-agents, plans)
)

// Kinds lists the kinds a rule may name.
func Kinds() []Kind { return []Kind{Shell, Edit, Read, Fetch, MCP, Network, Other} }

func kindList() string {
	var s []string
	for _, k := range Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// ToolNames are the tool names each CLI uses, by kind (docs/tools.md
// lists them). MCP tools are "mcp__<server>__<tool>" in Claude Code and
// Codex; Gemini CLI and OpenCode name them by the server's tool name.
var ToolNames = map[string]map[Kind][]string{
	"claude": {
		Shell: {"Bash", "BashOutput", "KillShell", "KillBash"},
		Edit:  {"Edit", "MultiEdit", "Write", "NotebookEdit"},
		Read:  {"Read", "Glob", "Grep", "LS", "NotebookRead"},
		Fetch: {"WebFetch", "WebSearch"},
	},
	"codex": {
		Shell: {"exec_command", "shell", "local_shell", "container.exec", "write_stdin", "Bash"},
		Edit:  {"apply_patch"},
		Read:  {"view_image", "read_file", "list_dir", "grep_files"},
		Fetch: {"web_search"},
	},
	"gemini": {
		Shell: {"run_shell_command"},
		Edit:  {"replace", "write_file"},
		Read:  {"read_file", "read_many_files", "glob", "grep_search", "search_file_content", "list_directory"},
		Fetch: {"web_fetch", "google_web_search"},
	},
	// ampflow's egress proxy asks for a sandboxed run's connections.
	"egress": {
		Network: {"connect"},
	},
	// An ACP agent's permission request names the tool call's kind.
	"acp": {
		Shell: {"execute"},
		Edit:  {"edit", "delete", "move"},
		Read:  {"read", "search"},
		Fetch: {"fetch"},
	},
	"opencode": {
		Shell: {"bash"},
		Edit:  {"edit", "write", "patch", "multiedit"},
		Read:  {"read", "glob", "grep", "list"},
		Fetch: {"webfetch", "websearch"},
	},
}

// KindOf maps a tool's name to its kind: by the CLI's own names, else by
// any CLI's, else Other.
func KindOf(cli, tool string) Kind {
	if strings.HasPrefix(tool, "mcp__") {
		return MCP
	}
	if k, ok := kindIn(ToolNames[cli], tool); ok {
		return k
	}
	for _, name := range []string{"claude", "codex", "gemini", "opencode"} {
		if k, ok := kindIn(ToolNames[name], tool); ok {
			return k
		}
	}
	return Other
}

func kindIn(m map[Kind][]string, tool string) (Kind, bool) {
	for _, k := range Kinds() {
		if slices.Contains(m[k], tool) {
			return k, true
		}
	}
	return "", false
}

// pathKeys are the input fields that name a file an edit tool writes, or
// the directory a shell tool runs in, across the CLIs.
var pathKeys = []string{"file_path", "filePath", "notebook_path", "path", "workdir", "dir_path", "cwd"}

// Paths lists the paths a call touches, made absolute against cwd: the
// file an edit or read tool names, each file of an apply_patch, and the
// directory a shell command runs in (cwd when it names none). What a
// shell command writes is not read from its text: a rule's match covers
// that.
func Paths(cli, tool string, input json.RawMessage, cwd string) []string {
	kind := KindOf(cli, tool)
	if kind != Edit && kind != Shell && kind != Read {
		return nil
	}
	var fields map[string]any
	_ = json.Unmarshal(input, &fields)
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, k := range pathKeys {
		if s, ok := fields[k].(string); ok {
			add(s)
		}
	}
	if tool == "apply_patch" {
		patch := string(input)
		for _, k := range []string{"input", "patch", "command"} {
			switch v := fields[k].(type) {
			case string:
				patch = v
			case []any:
				for _, x := range v {
					if s, ok := x.(string); ok && strings.Contains(s, "*** ") {
						patch = s
					}
				}
			}
		}
		for _, f := range PatchFiles(patch) {
			add(f)
		}
	}
	if kind == Shell && len(out) == 0 {
		add(cwd)
	}
	return out
}

// PatchFiles lists the files an apply_patch patch adds, updates, deletes
// or moves to.
func PatchFiles(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimSpace(line)
		for _, p := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if f, ok := strings.CutPrefix(line, p); ok {
				out = append(out, strings.TrimSpace(f))
			}
		}
	}
	return out
}

// Within reports whether path is root or below it. Both are cleaned;
// symbolic links are not followed.
func Within(root, path string) bool {
	if root == "" {
		return true
	}
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
