package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestAOFChatReview answers an AOF task's review from Telegram: the
// decision is posted with its buttons like any other, an admin's press
// approves it, and the task is done.
func TestAOFChatReview(t *testing.T) {
	tg := newFakeTelegram(t, tgToken)
	sl := newFakeSlack(t, slackToken)
	p := startDev(t, t.TempDir(), chatEnv(tg, sl)...)
	c := aofClient{newFaultAPI(t, p)}
	const id = "TASK-2026-02-09-080"
	c.create(id, nil)
	c.dispatch(id, 600000)
	c.must(aofExample(t, "1", map[string]any{"taskId": id}))
	c.sessionEnd()
	c.waitStatus(id, "review", 30*time.Second)
	post := tg.await(t, "the review of "+id+" posted to Telegram", "sendMessage", func(cc chatCall) bool {
		rows, ok := tgKeyboard(t, cc)
		return ok && len(rows) > 0 && strings.Contains(cc.Form["text"], id)
	})
	sl.await(t, "the review of "+id+" posted to Slack", "chat.postMessage", func(cc chatCall) bool {
		return strings.Contains(cc.Form["text"], id)
	})
	for _, fact := range []string{"<b>Summary</b> task " + id, "<b>Outcome</b> done by swe-backend", "<b>Tests</b> 120/120 passed"} {
		if !strings.Contains(post.Form["text"], fact) {
			t.Errorf("the review post does not show %q:\n%s", fact, post.Form["text"])
		}
	}
	approve := tgOption(t, post, "Approve: done", "Send back to ready", "Block")
	tg.push(pressed("cq-aof", 42, approve))
	c.waitStatus(id, "done", 30*time.Second)
	last := c.lastEvent(id, "task.transitioned")
	if last.Payload["to"] != "done" || !strings.Contains(last.Payload["reason"].(string), "telegram:42") {
		t.Errorf("last transition %v, want done by telegram:42", last.Payload)
	}
	tg.await(t, "the Telegram message of "+id+" edited", "editMessageText", func(cc chatCall) bool {
		return strings.Contains(cc.Form["text"], id) && strings.Contains(cc.Form["text"], "telegram:42")
	})
}
