package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// sectionTexts returns the text of every section block in blocks (JSON).
func sectionTexts(t *testing.T, blocks string) []string {
	t.Helper()
	var bs []struct {
		Type string `json:"type"`
		Text struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	if err := json.Unmarshal([]byte(blocks), &bs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		if b.Type == "section" {
			out = append(out, b.Text.Text)
		}
	}
	return out
}

func TestRenderToolCallGolden(t *testing.T) {
	shell := chattest.ToolCallDecision("Bash", "shell", `{"command":"curl -s http://127.0.0.1:9/ <script>alert(1)</script> && echo *done*","description":"probe"}`)
	edit := chattest.ToolCallDecision("Edit", "edit", "{\"file_path\":\"/srv/wt/T-2026-045/a.html\",\"new_string\":\"<b>new</b> & ```x```\",\"old_string\":\"<i>old</i>\"}")
	chattest.Golden(t, "decision_tool_shell.json", jsonText(t, RenderDecision(shell, []string{"tok1", "tok2", "tok3"}), "  "))
	chattest.Golden(t, "decision_tool_edit.json", jsonText(t, RenderDecision(edit, []string{"tok1", "tok2", "tok3"}), "  "))
}

// TestNotifyPostsToolCall posts a tool_call decision to the fake Slack:
// the command shows in a code block, escaped for mrkdwn, with the rule,
// its reason, the directory, the quorum and the three options.
func TestNotifyPostsToolCall(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{})
	d := chattest.ToolCallDecision("Bash", "shell", `{"command":"curl -s http://x/ <script>alert(1)</script> && echo ok -H 'Authorization: Bearer sekret-0123'","description":"probe"}`)
	if err := b.Notify(context.Background(), chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	posts := f.Calls("chat.postMessage")
	if len(posts) != 1 {
		t.Fatalf("got %d posts, want 1", len(posts))
	}
	blocks := posts[0].Form["blocks"]
	all := strings.Join(sectionTexts(t, blocks), "\n")
	for _, want := range []string{
		"```\ncurl -s http://x/ &lt;script&gt;alert(1)&lt;/script&gt; &amp;&amp; echo ok -H 'Authorization: Bearer ***'\n```",
		"*Rule* `ask-network` — network access &lt;needs&gt; an admin &amp; a reason",
		"*Directory* `/srv/wt/T-2026-045`", "*Quorum* 2 admins", "`executor (codex)` wants to run `Bash` (shell)",
		"Allow once · Allow this tool for the rest of the task · Deny",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the post lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "<script>") {
		t.Error("the command reached Slack unescaped")
	}
	if strings.Contains(posts[0].Form["text"]+blocks, "sekret-0123") {
		t.Error("the bearer token in the command reached Slack")
	}
	for _, id := range []string{"ampflow_opt_allow_once", "ampflow_opt_allow_tool", "ampflow_opt_deny"} {
		if !strings.Contains(blocks, id) {
			t.Errorf("no %s button", id)
		}
	}
}

// TestRenderToolCallBounded: a long diff full of characters mrkdwn
// escapes stays inside a section's 3000 characters, and says it was cut.
func TestRenderToolCallBounded(t *testing.T) {
	content := strings.Repeat("<&>", 3000) + "\n" + strings.Repeat("line\n", 500)
	in, _ := json.Marshal(map[string]string{"file_path": "/w/big.txt", "content": content})
	d := chattest.ToolCallDecision("Write", "edit", string(in))
	texts := sectionTexts(t, string(jsonText(t, RenderDecision(d, []string{"a", "b", "c"}), "")))
	found := false
	for _, s := range texts {
		if n := utf8.RuneCountInString(s); n > 3000 {
			t.Errorf("a section of %d characters", n)
		}
		if strings.HasPrefix(s, "*File* `/w/big.txt`") {
			found = true
			if !strings.Contains(s, "+ &lt;&amp;&gt;") || !strings.Contains(s, "…") {
				t.Errorf("the diff section: %.200s", s)
			}
		}
	}
	if !found {
		t.Errorf("no file section in %q", texts)
	}
}
