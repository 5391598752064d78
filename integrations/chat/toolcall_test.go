package chat_test

import (
	"strings"
	"testing"

	"github.com/ampflow/ampflow/integrations/chat"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

func TestToolCallOf(t *testing.T) {
	tests := []struct {
		name, tool, kind, input     string
		command, path, excerpt, raw string
	}{
		{name: "ClaudeBash", tool: "Bash", kind: "shell", input: `{"command":"curl -s http://x/","description":"probe"}`, command: "curl -s http://x/"},
		{name: "CodexArgv", tool: "shell", kind: "shell", input: `{"command":["bash","-lc","git push origin main"]}`, command: "git push origin main"},
		{name: "CodexExec", tool: "exec_command", kind: "shell", input: `{"cmd":"ls -la"}`, command: "ls -la"},
		{name: "ClaudeEdit", tool: "Edit", kind: "edit", input: `{"file_path":"/w/a.go","new_string":"b := 2\nc := 3","old_string":"a := 1"}`,
			path: "/w/a.go", excerpt: "- a := 1\n+ b := 2\n+ c := 3"},
		{name: "ClaudeMultiEdit", tool: "MultiEdit", kind: "edit", input: `{"edits":[{"new_string":"y","old_string":"x"},{"new_string":"q","old_string":"p"}],"file_path":"/w/m.go"}`,
			path: "/w/m.go", excerpt: "- x\n+ y\n- p\n+ q"},
		{name: "ClaudeWrite", tool: "Write", kind: "edit", input: `{"content":"hello\nworld\n","file_path":"/w/h.txt"}`, path: "/w/h.txt", excerpt: "+ hello\n+ world"},
		{name: "GeminiReplace", tool: "replace", kind: "edit", input: `{"file_path":"/w/r.go","instruction":"fix","new_string":"new","old_string":"old"}`,
			path: "/w/r.go", excerpt: "- old\n+ new"},
		{name: "GeminiWriteFile", tool: "write_file", kind: "edit", input: `{"content":"x","file_path":"/w/x"}`, path: "/w/x", excerpt: "+ x"},
		{name: "OpenCodeEdit", tool: "edit", kind: "edit", input: `{"filePath":"/w/o.ts","newString":"b","oldString":"a"}`, path: "/w/o.ts", excerpt: "- a\n+ b"},
		{name: "OpenCodeWrite", tool: "write", kind: "edit", input: `{"content":"c","filePath":"/w/c.ts"}`, path: "/w/c.ts", excerpt: "+ c"},
		{name: "CodexApplyPatch", tool: "apply_patch", kind: "edit",
			input: `{"command":["apply_patch","*** Begin Patch\n*** Update File: a.go\n@@\n-x\n+y\n*** End Patch"]}`,
			path:  "a.go", excerpt: "*** Begin Patch\n*** Update File: a.go\n@@\n-x\n+y\n*** End Patch"},
		{name: "Other", tool: "WebFetch", kind: "fetch", input: `{"url":"https://example.com"}`, raw: `{"url":"https://example.com"}`},
		{name: "Truncated", tool: "Bash", kind: "shell", input: `{"command":"echo aaaa`, raw: `{"command":"echo aaaa`},
		{name: "Secret", tool: "Bash", kind: "shell", input: `{"command":"curl -H 'Authorization: Bearer abc.def.ghi' https://x"}`,
			command: "curl -H 'Authorization: Bearer ***' https://x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := chat.ToolCallOf(chattest.ToolCallDecision(tt.tool, tt.kind, tt.input))
			if !ok {
				t.Fatal("not read as a tool call")
			}
			if c.Command != tt.command || c.Path != tt.path || c.Excerpt != tt.excerpt || c.Input != tt.raw {
				t.Errorf("got command %q path %q excerpt %q input %q", c.Command, c.Path, c.Excerpt, c.Input)
			}
			if c.Tool != tt.tool || c.Kind != tt.kind || c.CWD != "/srv/wt/T-2026-045" || c.Rule != "ask-network" || c.Agent != "exec" || c.Risk != "high" {
				t.Errorf("got %+v", c)
			}
		})
	}
	if _, ok := chat.ToolCallOf(chattest.PlanDecision()); ok {
		t.Error("a plan approval read as a tool call")
	}
}

func TestMaskSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstu":    "export OPENAI_API_KEY=***",
		"git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123@x": "git clone https://***@x",
		"mysql --password=hunter22 db":                           "mysql --password=*** db",
		`{"api_key":"abcd1234","url":"https://x"}`:               `{"api_key":"***","url":"https://x"}`,
		"ls -la": "ls -la",
	} {
		if got := chat.MaskSecrets(in); got != want {
			t.Errorf("chat.MaskSecrets(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClipBlock(t *testing.T) {
	s := strings.Repeat("  line\n", 100)
	got := chat.ClipBlock(s, 10, 1000)
	if !strings.HasPrefix(got, "  line\n") || !strings.HasSuffix(got, "… 91 more lines") || strings.Count(got, "\n") != 10 {
		t.Errorf("ClipBlock = %q", got)
	}
	if got := chat.ClipBlock("abcdef", 10, 3); got != "abc…" {
		t.Errorf("ClipBlock by runes = %q", got)
	}
}

func TestFit(t *testing.T) {
	esc := func(s string) string { return strings.ReplaceAll(s, "<", "&lt;") }
	got := chat.Fit(strings.Repeat("<", 1000), 500, esc)
	if len(got) > 500 || !strings.HasPrefix(got, "&lt;") {
		t.Errorf("Fit: %d bytes", len(got))
	}
}
