package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/slack/slacktest"
	"github.com/ampflow/ampflow/integrations/telegram/telegramtest"
)

// TestAOFChatReview answers an AOF task's review from Telegram: the
// decision is posted with its buttons like any other, an admin's press
// approves it, and the task is done.
func TestAOFChatReview(t *testing.T) {
	tg := telegramtest.New(t, tgToken)
	sl := slacktest.New(t, slackToken)
	p := startDev(t, t.TempDir(), chatEnv(tg, sl)...)
	c := newAPIClient(t, p.api, "")
	const id = "TASK-2026-02-09-080"
	c.create(id, nil)
	c.dispatch(id, 600000)
	c.must(aofExample(t, "1", map[string]any{"taskId": id}))
	c.sessionEnd()
	c.waitStatus(id, "review", 30*time.Second)
	post := await(t, tg, "the review of "+id+" posted to Telegram", "sendMessage", func(cc chatCall) bool {
		rows, ok := tgKeyboard(t, cc)
		return ok && len(rows) > 0 && strings.Contains(cc.Form["text"], id)
	})
	await(t, sl, "the review of "+id+" posted to Slack", "chat.postMessage", func(cc chatCall) bool {
		return strings.Contains(cc.Form["text"], id)
	})
	for _, fact := range []string{"<b>Summary</b> task " + id, "<b>Outcome</b> done by swe-backend", "<b>Tests</b> 120/120 passed"} {
		if !strings.Contains(post.Form["text"], fact) {
			t.Errorf("the review post does not show %q:\n%s", fact, post.Form["text"])
		}
	}
	approve := tgOption(t, post, "Approve: done", "Send back to ready", "Block")
	tg.Push(pressed("cq-aof", 42, approve))
	c.waitStatus(id, "done", 30*time.Second)
	last := c.lastEvent(id, "task.transitioned")
	if last.Payload["to"] != "done" || !strings.Contains(last.Payload["reason"].(string), "telegram:42") {
		t.Errorf("last transition %v, want done by telegram:42", last.Payload)
	}
	await(t, tg, "the Telegram message of "+id+" edited", "editMessageText", func(cc chatCall) bool {
		return strings.Contains(cc.Form["text"], id) && strings.Contains(cc.Form["text"], "telegram:42")
	})

	// "Notification sent": examples 2, 4 and 7 move a task to blocked,
	// and the admins hear of it.
	const t2, t4, t7 = "TASK-2026-02-09-081", "TASK-2026-02-09-082", "TASK-2026-02-09-083"
	c.create(t2, nil)
	c.dispatch(t2, 600000)
	c.must(aofExample(t, "2", map[string]any{"taskId": t2}))
	c.sessionEnd()
	c.create(t4, nil)
	c.dispatch(t4, 600000)
	c.must(aofExample(t, "4", map[string]any{"taskId": t4, "payload.taskId": t4}))
	c.create(t7, nil)
	c.must(aofExample(t, "7", map[string]any{"taskId": t7, "payload.taskId": t7}))
	for id, reason := range map[string]string{t2: "session_end_blocked", t4: "Test environment unreachable", t7: "Insufficient context: no test plan provided"} {
		c.waitStatus(id, "blocked", 30*time.Second)
		await(t, tg, "the notice of "+id+" blocked on Telegram", "sendMessage", func(cc chatCall) bool {
			text := cc.Form["text"]
			return strings.Contains(text, id) && strings.Contains(text, "<b>blocked</b>") && strings.Contains(text, reason)
		})
		await(t, sl, "the notice of "+id+" blocked on Slack", "chat.postMessage", func(cc chatCall) bool {
			return strings.Contains(cc.Form["text"], id) && strings.Contains(cc.Form["text"], "blocked")
		})
	}
}
