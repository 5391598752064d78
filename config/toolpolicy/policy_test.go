package toolpolicy

import (
	"encoding/json"
	"slices"
	"testing"
)

func input(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDefaultRules(t *testing.T) {
	p, err := New(DefaultRules(), Allow)
	if err != nil {
		t.Fatal(err)
	}
	const wt = "/data/worktrees/T-2026-001"
	bash := func(cmd string) json.RawMessage {
		return input(t, map[string]string{"command": cmd, "description": "run"})
	}
	for _, c := range []struct {
		name       string
		cli, tool  string
		in         json.RawMessage
		cwd        string
		want       Action
		rule, kind string
	}{
		{"ForcePush", "claude", "Bash", bash("git push --force origin main"), wt, Deny, "no-force-push", "shell"},
		{"ForcePushShort", "claude", "Bash", bash("git push -f origin feature/x"), wt, Deny, "no-force-push", "shell"},
		{"ForcePushPlus", "claude", "Bash", bash("git -C . push origin +feature/x"), wt, Deny, "no-force-push", "shell"},
		{"ForceWithLease", "codex", "exec_command", input(t, map[string]string{"cmd": "git push --force-with-lease"}), wt, Deny, "no-force-push", "shell"},
		{"PushMain", "claude", "Bash", bash("git push origin main"), wt, Deny, "no-push-to-default-branch", "shell"},
		{"PushHeadMain", "gemini", "run_shell_command", input(t, map[string]string{"command": "git push origin HEAD:master"}), wt, Deny, "no-push-to-default-branch", "shell"},
		{"PushBranch", "claude", "Bash", bash("git push origin feature/main-fix"), wt, Ask, "ask-network", "shell"},
		{"Curl", "claude", "Bash", bash("curl http://127.0.0.1:8080/"), wt, Ask, "ask-network", "shell"},
		{"WebFetch", "claude", "WebFetch", input(t, map[string]string{"url": "https://example.com", "prompt": "read"}), wt, Ask, "ask-fetch", "fetch"},
		{"GitCommit", "claude", "Bash", bash("git commit -qm 'add hello'"), wt, Allow, "", "shell"},
		{"WriteInside", "claude", "Write", input(t, map[string]string{"file_path": wt + "/hello.txt", "content": "hi"}), wt, Allow, "", "edit"},
		{"WriteRelative", "opencode", "write", input(t, map[string]string{"filePath": "src/a.go"}), wt, Allow, "", "edit"},
		{"WriteOutside", "claude", "Write", input(t, map[string]string{"file_path": "/etc/passwd", "content": "x"}), wt, Deny, "no-write-outside-worktree", "edit"},
		{"EditDotDot", "claude", "Edit", input(t, map[string]string{"file_path": wt + "/../other/x.go"}), wt, Deny, "no-write-outside-worktree", "edit"},
		{"SiblingPrefix", "gemini", "write_file", input(t, map[string]string{"file_path": wt + "-review/x.go"}), wt, Deny, "no-write-outside-worktree", "edit"},
		{"PatchOutside", "codex", "apply_patch", input(t, map[string]string{"input": "*** Begin Patch\n*** Add File: ../../escape.txt\n+x\n*** End Patch"}), wt, Deny, "no-write-outside-worktree", "edit"},
		{"PatchInside", "codex", "apply_patch", input(t, map[string]string{"input": "*** Begin Patch\n*** Update File: a.go\n@@\n-x\n+y\n*** End Patch"}), wt, Allow, "", "edit"},
		{"ReadOutside", "claude", "Read", input(t, map[string]string{"file_path": "/etc/hosts"}), wt, Allow, "", "read"},
		{"MCP", "claude", "mcp__ampflow__chat_send", input(t, map[string]string{"text": "hi"}), wt, Allow, "", "mcp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := p.Decide(Call{CLI: c.cli, Tool: c.tool, Input: c.in, CWD: c.cwd, Worktree: wt})
			if v.Action != c.want || v.Rule != c.rule || string(v.Kind) != c.kind {
				t.Errorf("Decide = %s by %q (kind %s), want %s by %q (kind %s); paths %v", v.Action, v.Rule, v.Kind, c.want, c.rule, c.kind, v.Paths)
			}
			if v.Action == Deny && v.Reason == "" {
				t.Error("a deny has no reason")
			}
		})
	}
}

func TestRules(t *testing.T) {
	rules := []Rule{
		{Tool: "Bash", Match: `(?i)rm\s+-rf`, Action: Deny, Reason: "no rm -rf"},
		{Tool: "Write|Edit|MultiEdit", OutsideWorktree: true, Action: Deny},
		{Tool: "Web.*", Action: Ask, Risk: "high"},
	}
	p, err := New(rules, Deny)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, tool string
		in         any
		want       Action
		rule       string
	}{
		{"FirstMatch", "Bash", map[string]string{"command": "rm -rf /"}, Deny, "rules[0]"},
		{"ToolAnchored", "BashOutput", map[string]string{"command": "rm -rf /"}, Deny, ""},
		{"Outside", "MultiEdit", map[string]string{"file_path": "/tmp/x"}, Deny, "rules[1]"},
		{"InsideFallsToDefault", "Edit", map[string]string{"file_path": "/w/x"}, Deny, ""},
		{"AskRisk", "WebSearch", map[string]string{"query": "x"}, Ask, "rules[2]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := p.Decide(Call{CLI: "claude", Tool: c.tool, Input: input(t, c.in), CWD: "/w"})
			if v.Action != c.want || v.Rule != c.rule {
				t.Errorf("Decide = %s by %q, want %s by %q", v.Action, v.Rule, c.want, c.rule)
			}
			if c.rule == "rules[1]" && v.Reason == "" {
				t.Error("a rule without a reason gives none")
			}
			if c.name == "AskRisk" && v.Risk != "high" {
				t.Errorf("risk = %q", v.Risk)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	ps := Check([]Rule{{Tool: "(", Action: "maybe", Kind: "net", Risk: "huge", Match: "[z-a]"}}, "sometimes")
	var fields []string
	for _, p := range ps {
		fields = append(fields, p.Field)
	}
	for _, want := range []string{"default", "rules[0].action", "rules[0].kind", "rules[0].risk", "rules[0].tool", "rules[0].match"} {
		if !slices.Contains(fields, want) {
			t.Errorf("no problem with %s in %v", want, ps)
		}
	}
	if ps := Check(DefaultRules(), Allow); len(ps) > 0 {
		t.Errorf("the default rules: %v", ps)
	}
	if _, err := New([]Rule{{Action: "x"}}, Allow); err == nil {
		t.Error("New took a bad rule")
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b": 1, "a": "<x>"}`, `{"a":"<x>","b":1}`},
		{`{"n": 12345678901234567890}`, `{"n":12345678901234567890}`},
		{`not json`, `"not json"`},
		{``, `null`},
	} {
		if got := CanonicalText(json.RawMessage(c.in)); got != c.want {
			t.Errorf("Canonical(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		cli, tool string
		want      Kind
	}{
		{"claude", "Bash", Shell}, {"claude", "MultiEdit", Edit}, {"claude", "WebFetch", Fetch}, {"claude", "Grep", Read},
		{"codex", "exec_command", Shell}, {"codex", "apply_patch", Edit}, {"codex", "mcp__ampflow__send", MCP},
		{"gemini", "run_shell_command", Shell}, {"gemini", "replace", Edit}, {"gemini", "web_fetch", Fetch},
		{"opencode", "bash", Shell}, {"opencode", "edit", Edit}, {"opencode", "read", Read},
		{"claude", "TodoWrite", Other}, {"", "Bash", Shell},
	} {
		if got := KindOf(c.cli, c.tool); got != c.want {
			t.Errorf("KindOf(%s, %s) = %s, want %s", c.cli, c.tool, got, c.want)
		}
	}
}

// TestMatchAsAPersonReads: the default rules match a command as a person
// (and the shell) reads it, not its JSON escapes: a tab is a blank,
// quotes and backslashes inside a word hide nothing, and a JSON "\n"
// before a word makes no word of its own.
func TestMatchAsAPersonReads(t *testing.T) {
	p, err := New(DefaultRules(), Allow)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command string
		rule    string
	}{
		{"git\tpush --force origin feature/x", "no-force-push"},
		{"g''it pu\"\"sh -f origin feature/x", "no-force-push"},
		{"git push\\\n --force origin feature/x", "no-force-push"},
		{"git${IFS}push${IFS}--force", "no-force-push"},
		{`git -C . push origin HEAD:"main"`, "no-push-to-default-branch"},
		{"git\tpush origin feature/x", "ask-network"},
		{"cat <<EOF\nrun nc later\nEOF", "ask-network"},
		{"printf 'one\ncat two'", ""},
		{"ls -la\ncd src", ""},
	} {
		input, _ := json.Marshal(map[string]string{"command": c.command})
		v := p.Decide(Call{CLI: "claude", Tool: "Bash", Input: input, CWD: "/w", Worktree: "/w"})
		if v.Rule != c.rule {
			t.Errorf("%q: rule %q (%s), want %q", c.command, v.Rule, v.Action, c.rule)
		}
	}
}
