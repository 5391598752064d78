package telegram

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// layout writes a message the way a reader checks it: the HTML text, then
// the keyboard one row a line.
func layout(m Message) []byte {
	var b bytes.Buffer
	b.WriteString(m.Text)
	b.WriteString("\n-- keyboard --\n")
	switch {
	case m.Keyboard == nil:
		b.WriteString("(none)\n")
	case len(m.Keyboard.InlineKeyboard) == 0:
		b.WriteString("(removed)\n")
	}
	if m.Keyboard != nil {
		for _, row := range m.Keyboard.InlineKeyboard {
			var cells []string
			for _, btn := range row {
				cells = append(cells, fmt.Sprintf("[%s → %s]", btn.Text, btn.CallbackData))
			}
			b.WriteString(strings.Join(cells, " ") + "\n")
		}
	}
	return b.Bytes()
}

func TestRenderGolden(t *testing.T) {
	plan, lock := chattest.PlanDecision(), chattest.LockDecision()
	tests := []struct {
		name string
		m    Message
	}{
		{"decision_plan.txt", RenderDecision(plan, []string{"tokA", "tokB"})},
		{"decision_lock.txt", RenderDecision(lock, []string{"tok1", "tok2", "tok3"})},
		{"decision_gate.txt", RenderDecision(chattest.GateDecision(), []string{"tokA", "tokB"})},
		{"closed_plan.txt", RenderClosed(plan, chattest.Outcome(plan, decision.OptApprove, "telegram:42", "telegram", ""))},
		{"closed_lock_note.txt", RenderClosed(lock, chattest.Outcome(lock, task.OptAccept, "slack:U1", "slack", "Known <flaky> test;\nship it"))},
		{"closed_withdrawn.txt", RenderClosed(plan, chattest.Outcome(plan, decision.OptWithdrawn, "system", "workflow", ""))},
		{"escalation.txt", RenderEscalation(*lock.Escalation)},
		{"status.txt", RenderStatus(notify.Input{TaskID: "T-2026-001", Status: task.StatusCICheck, Text: "round 2 of 3"})},
		{"note_prompt.txt", RenderNotePrompt(lock, lock.Options[1], 42, "Ana <ops>")},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.name, ".txt"), func(t *testing.T) { chattest.Golden(t, tt.name, layout(tt.m)) })
	}
}

func TestRenderEscapesHTML(t *testing.T) {
	d := chattest.LockDecision()
	d.Prompt = `Use <b>bold</b> & "quotes"`
	text := RenderDecision(d, nil).Text
	if strings.Contains(text, "<b>bold</b>") || !strings.Contains(text, "&lt;b&gt;bold&lt;/b&gt; &amp; &#34;quotes&#34;") {
		t.Errorf("prompt not escaped:\n%s", text)
	}
	if strings.Contains(text, "<limit>") {
		t.Error("escalation description not escaped")
	}
}

func TestRenderDecisionButtons(t *testing.T) {
	m := RenderDecision(chattest.LockDecision(), []string{"tok1", "", "tok3"})
	var data []string
	for _, row := range m.Keyboard.InlineKeyboard {
		if len(row) != 1 {
			t.Errorf("row of %d buttons; one a row reads best on a phone", len(row))
		}
		for _, b := range row {
			data = append(data, b.CallbackData)
		}
	}
	if strings.Join(data, ",") != "tok1,tok3" {
		t.Errorf("callback data %v, want tok1,tok3 (no button without a token)", data)
	}
	if m := RenderDecision(chattest.LockDecision(), nil); m.Keyboard != nil {
		t.Error("a decision without tokens got a keyboard")
	}
}

func TestRenderFitsTelegram(t *testing.T) {
	d := chattest.LockDecision()
	long := strings.Repeat("very long text & more ", 400)
	d.Prompt, d.Context.Description = long, long
	for range 20 {
		d.Context.Issues = append(d.Context.Issues, d.Context.Issues[0])
		d.Context.Blockers = append(d.Context.Blockers, long)
	}
	if n := len([]rune(RenderClosed(d, chattest.Outcome(d, task.OptAccept, "slack:U1", "slack", long)).Text)); n > 4096 {
		t.Errorf("closed text is %d characters, over Telegram's 4096", n)
	}
}

func BenchmarkRenderDecision(b *testing.B) {
	d := chattest.LockDecision()
	tokens := []string{"tok1", "tok2", "tok3"}
	b.ReportAllocs()
	for b.Loop() {
		_ = RenderDecision(d, tokens)
	}
}
