package telegram

import (
	"context"
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

func TestRenderToolCallGolden(t *testing.T) {
	shell := chattest.ToolCallDecision("Bash", "shell", `{"command":"curl -s http://127.0.0.1:9/ <script>alert(1)</script> && echo </code></pre><b>x</b>","description":"probe"}`)
	patch := chattest.ToolCallDecision("apply_patch", "edit", `{"command":["apply_patch","*** Begin Patch\n*** Update File: a.go\n@@\n-x := \"<a>\"\n+x := \"&amp;\"\n*** End Patch"]}`)
	chattest.Golden(t, "decision_tool_shell.txt", layout(RenderDecision(shell, []string{"tok1", "tok2", "tok3"})))
	chattest.Golden(t, "decision_tool_patch.txt", layout(RenderDecision(patch, []string{"tok1", "tok2", "tok3"})))
}

// TestNotifyPostsToolCall posts a tool_call decision to the fake
// Telegram: the command shows in a pre block, escaped for the HTML parse
// mode the bot uses, with the rule, the directory, the quorum and the
// three options as buttons.
func TestNotifyPostsToolCall(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{}, config.TelegramModePolling)
	d := chattest.ToolCallDecision("Bash", "shell", `{"command":"curl -s http://x/ <script>alert(1)</script> </code></pre> && echo ok"}`)
	if err := b.Notify(context.Background(), chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	sent := f.Calls("sendMessage")
	if len(sent) != 1 {
		t.Fatalf("got %d messages, want 1", len(sent))
	}
	text := sent[0].Form["text"]
	for _, want := range []string{
		`<pre><code class="language-bash">curl -s http://x/ &lt;script&gt;alert(1)&lt;/script&gt; &lt;/code&gt;&lt;/pre&gt; &amp;&amp; echo ok</code></pre>`,
		"<b>Rule</b> <code>ask-network</code> — network access &lt;needs&gt; an admin &amp; a reason",
		"<b>Directory</b> <code>/srv/wt/T-2026-045</code>", "<b>Quorum</b> 2 admins",
		"<code>executor (codex)</code> wants to run <code>Bash</code> (shell)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the message lacks %q:\n%s", want, text)
		}
	}
	if sent[0].Form["parse_mode"] != "HTML" || strings.Contains(text, "<script>") {
		t.Errorf("parse mode %q; text:\n%s", sent[0].Form["parse_mode"], text)
	}
	kb := keyboard(t, sent[0])
	if len(kb.InlineKeyboard) != 3 || kb.InlineKeyboard[2][0].Text != "Deny ✍️" {
		t.Errorf("keyboard %+v", kb)
	}
}

var tag = regexp.MustCompile(`<[^>]*>`)

// TestRenderToolCallBounded: a long diff full of characters HTML escapes
// keeps the message inside Telegram's 4096 characters, its text as
// written and as Telegram counts it once parsed, and says it was cut.
func TestRenderToolCallBounded(t *testing.T) {
	content := strings.Repeat("<&>", 3000) + "\n" + strings.Repeat("line\n", 500)
	in, _ := json.Marshal(map[string]string{"filePath": "/w/big.txt", "content": content})
	d := chattest.ToolCallDecision("write", "edit", string(in))
	for _, m := range []Message{RenderDecision(d, []string{"a", "b", "c"}),
		RenderClosed(d, chattest.Outcome(d, "deny", "telegram:42", "telegram", strings.Repeat("<no>", 200)))} {
		if n := utf8.RuneCountInString(m.Text); n > 4096 {
			t.Errorf("a message of %d characters", n)
		}
		if n := utf8.RuneCountInString(html.UnescapeString(tag.ReplaceAllString(m.Text, ""))); n > 4096 {
			t.Errorf("a message of %d characters once parsed", n)
		}
		if !strings.Contains(m.Text, "<b>File</b> <code>/w/big.txt</code>") || !strings.Contains(m.Text, "+ &lt;&amp;&gt;") || !strings.Contains(m.Text, "…") {
			t.Errorf("the message: %.600s", m.Text)
		}
	}
}
