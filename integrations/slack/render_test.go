package slack

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/chat"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// jsonText encodes v as Slack receives it, without HTML escaping so the
// text reads as written.
func jsonText(t testing.TB, v any, indent string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding: %v", err)
	}
	return buf.Bytes()
}

func TestRenderGolden(t *testing.T) {
	plan, lock := chattest.PlanDecision(), chattest.LockDecision()
	tests := []struct {
		name string
		v    any
	}{
		{"decision_plan.json", RenderDecision(plan, []string{"tokA", "tokB"})},
		{"decision_gate.json", RenderDecision(chattest.GateDecision(), []string{"tokA", "tokB"})},
		{"decision_lock.json", RenderDecision(lock, []string{"tok1", "tok2", "tok3"})},
		{"closed_plan.json", RenderClosed(plan, chattest.Outcome(plan, decision.OptApprove, "slack:U1", "slack", ""))},
		{"closed_lock_note.json", RenderClosed(lock, chattest.Outcome(lock, task.OptAccept, "telegram:42", "telegram", "Known flake;\nship it"))},
		{"closed_withdrawn.json", RenderClosed(plan, chattest.Outcome(plan, decision.OptWithdrawn, "system", "workflow", ""))},
		{"escalation.json", RenderEscalation(*lock.Escalation)},
		{"note_modal.json", RenderNoteModal(lock, lock.Options[1], "tok2")},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.name, ".json"), func(t *testing.T) { chattest.Golden(t, tt.name, jsonText(t, tt.v, "  ")) })
	}
}

func TestRenderDecisionButtons(t *testing.T) {
	d := chattest.LockDecision()
	raw := jsonText(t, RenderDecision(d, []string{"tok1", "", "tok3"}), "")
	s := string(raw)
	for _, want := range []string{`"value":"tok1"`, `"value":"tok3"`, `"style":"danger"`} {
		if !strings.Contains(s, want) {
			t.Errorf("rendering lacks %s", want)
		}
	}
	if strings.Contains(s, "ampflow_opt_accept") {
		t.Error("an option without a token got a button")
	}
	if strings.Contains(s, "<limit>") || !strings.Contains(s, "&lt;limit&gt; &amp; retry") {
		t.Error("escalation text is not escaped for mrkdwn")
	}
}

func TestRenderClosedHasNoButtons(t *testing.T) {
	d := chattest.PlanDecision()
	raw := jsonText(t, RenderClosed(d, chattest.Outcome(d, decision.OptReject, "slack:U9", "slack", "too risky")), "")
	s := string(raw)
	if strings.Contains(s, `"type":"actions"`) || strings.Contains(s, `"type":"button"`) {
		t.Error("closed rendering still has buttons")
	}
	for _, want := range []string{"<@U9>", "via slack", "2026-03-01 12:04 UTC", "too risky", "Reject"} {
		if !strings.Contains(s, want) {
			t.Errorf("closed rendering lacks %q", want)
		}
	}
}

func TestRenderClosedOnTheDashboard(t *testing.T) {
	d := chattest.PlanDecision()
	s := string(jsonText(t, RenderClosed(d, chattest.Outcome(d, decision.OptApprove, "ana", "dashboard", "")), ""))
	if !strings.Contains(s, "by `ana` on the dashboard") {
		t.Errorf("a decision taken on the dashboard does not say so: %s", s)
	}
}

func TestRenderStatus(t *testing.T) {
	got := RenderStatus(notify.Input{TaskID: "T-2026-001", Status: task.StatusInReview, Text: "round 2 <x>"})
	if want := "`T-2026-001` is now *in review*: round 2 &lt;x&gt;"; got != want {
		t.Errorf("RenderStatus = %q, want %q", got, want)
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

// TestRenderEscapesText: what agents write reaches Slack as text, never
// as a mention of everyone or a link with a text of their choosing, in
// the blocks and in the notification texts alike.
func TestRenderEscapesText(t *testing.T) {
	const evil = "<!channel> see <https://evil.example|the diff> & <@U999>"
	d := chattest.PlanDecision()
	d.Prompt = evil
	d.Context.Description = evil
	lock := chattest.LockDecision()
	m := *lock.Escalation
	e := *m.Escalation()
	e.Description = evil
	m.Payload = &e
	outs := map[string]string{
		"RenderDecision":   string(jsonText(t, RenderDecision(d, []string{"tokA"}), "")),
		"DecisionText":     DecisionText(d),
		"PostText":         PostText(d, chat.Post{Escalated: true, Mention: []string{"U1"}}),
		"ClosedText":       ClosedText(d, chattest.Outcome(d, decision.OptApprove, "<!here>", "api", "")),
		"RenderEscalation": string(jsonText(t, RenderEscalation(m), "")),
		"EscalationText":   EscalationText(m),
		"RenderStatus":     RenderStatus(notify.Input{TaskID: "T-2026-001", Status: task.StatusDone, Text: evil}),
	}
	for name, out := range outs {
		for _, bad := range []string{"<!channel>", "<!here>", "<https://evil.example|", "<@U999>"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s passes %q through: %s", name, bad, out)
			}
		}
	}
}
