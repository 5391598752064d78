package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/slack/slacktest"
	"github.com/ampflow/ampflow/integrations/telegram/telegramtest"
	"github.com/ampflow/ampflow/workflows"
)

const (
	tgToken      = "123456:e2e-token"
	tgChat       = "-1001234567"
	slackToken   = "xoxb-e2e"
	slackSecret  = "e2e-signing-secret"
	slackChannel = "C0E2E"
	// slackInteract is the documented Interactivity Request URL path.
	slackInteract = "/slack/interactions"
)

// chatEnv configures `ampflow dev` with both chat integrations on fakes.
func chatEnv(tg *fakeTelegram, sl *fakeSlack) []string {
	return []string{
		"AMPFLOW_TELEGRAM_ENABLED=true",
		"AMPFLOW_TELEGRAM_TOKEN=" + tgToken,
		"AMPFLOW_TELEGRAM_CHAT_ID=" + tgChat,
		"AMPFLOW_TELEGRAM_ADMINS=42",
		"AMPFLOW_TELEGRAM_SERVER_URL=" + tg.URL(),
		"AMPFLOW_SLACK_ENABLED=true",
		"AMPFLOW_SLACK_MODE=http",
		"AMPFLOW_SLACK_BOT_TOKEN=" + slackToken,
		"AMPFLOW_SLACK_SIGNING_SECRET=" + slackSecret,
		"AMPFLOW_SLACK_CHANNEL=" + slackChannel,
		"AMPFLOW_SLACK_ADMINS=U1",
		"AMPFLOW_SLACK_API_URL=" + sl.APIURL(),
		"AMPFLOW_POLICY_PLAN_APPROVAL_MEDIUM=admin",
	}
}

// policyFrom derives a new task's policy from env as `ampflow task start`
// does from its configuration: chat notices on, the chat admins listed.
func policyFrom(t *testing.T, env []string) task.Policy {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg, err := config.LoadEnv(config.New(), "", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return workflows.NewPolicy(cfg)
}

func mediumRiskPlan(repo string) amp.TaskDispatch {
	p := lowRiskPlan(repo)
	p.RiskLevel = amp.RiskMedium
	return p
}

// TestChatApprovals runs `ampflow dev` with Telegram (polling) and Slack
// (HTTP mode) pointed at fakes of their APIs, and decides plan approvals
// from each: the decision is posted with its buttons, only an admin's
// press counts, it is recorded with who and where, and the message is
// edited to say so.
func TestChatApprovals(t *testing.T) {
	tg := telegramtest.New(t, tgToken)
	sl := slacktest.New(t, slackToken)
	env := chatEnv(tg, sl)
	p := startDev(t, t.TempDir(), env...)
	tasks := dial(t, p)
	pol := policyFrom(t, env)
	repo := gitRepo(t)
	start := func(id string) {
		t.Helper()
		// Each task on its own branch: approved, it holds its branch's
		// lease until it ends, and the next would wait for it.
		plan := mediumRiskPlan(repo)
		plan.Branch = newBranch(t, repo, "feature/"+id)
		in := task.Input{TaskID: id, Plan: plan, Coordinator: "e2e", Policy: pol}
		if err := tasks.Start(context.Background(), in); err != nil {
			t.Fatalf("starting %s: %v", id, err)
		}
		waitStatus(t, tasks, id, task.StatusAwaitingApproval)
	}

	t.Run("TelegramAdminApproves", func(t *testing.T) {
		const id = "T-2026-701"
		start(id)
		post := await(t, tg, "the plan approval of "+id+" posted to Telegram", "sendMessage", func(c chatCall) bool {
			rows, ok := tgKeyboard(t, c)
			return ok && len(rows) > 0 && strings.Contains(c.Form["text"], id)
		})
		if post.Form["chat_id"] != tgChat {
			t.Errorf("posted to chat %q, want %s", post.Form["chat_id"], tgChat)
		}
		approve := tgOption(t, post, "Approve", "Reject")

		tg.Push(pressed("cq-stranger", 7, approve))
		ans := await(t, tg, "the answer to user 7", "answerCallbackQuery", func(c chatCall) bool {
			return c.Form["callback_query_id"] == "cq-stranger"
		})
		if ans.Form["show_alert"] != "true" || !strings.Contains(ans.Form["text"], "Only ampflow admins") || !strings.Contains(ans.Form["text"], "(7)") {
			t.Errorf("user 7 was answered %q (alert %q), want the not-an-admin refusal", ans.Form["text"], ans.Form["show_alert"])
		}
		// The refusal is answered after the bot has refused: nothing can
		// have been decided by now.
		st, err := tasks.State(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != task.StatusAwaitingApproval || len(st.Decided) != 0 {
			t.Fatalf("after a non-admin's press: status %s, decided %+v; want awaiting_approval, nothing decided", st.Status, st.Decided)
		}

		tg.Push(pressed("cq-admin", 42, approve))
		ans = await(t, tg, "the answer to admin 42", "answerCallbackQuery", func(c chatCall) bool {
			return c.Form["callback_query_id"] == "cq-admin"
		})
		if ans.Form["show_alert"] == "true" || !strings.Contains(ans.Form["text"], "Recorded") {
			t.Errorf("admin 42 was answered %q (alert %q), want it recorded", ans.Form["text"], ans.Form["show_alert"])
		}
		st = waitStatus(t, tasks, id, task.StatusDispatched)
		checkDecided(t, st, "telegram:42", "telegram")

		edit := await(t, tg, "the Telegram message of "+id+" edited", "editMessageText", func(c chatCall) bool {
			return strings.Contains(c.Form["text"], id)
		})
		if edit.Form["chat_id"] != tgChat || edit.Form["message_id"] != post.NewID {
			t.Errorf("edited message %s in chat %s, want the posted one %s in %s", edit.Form["message_id"], edit.Form["chat_id"], post.NewID, tgChat)
		}
		if !strings.Contains(edit.Form["text"], "telegram:42") || !strings.Contains(edit.Form["text"], "via telegram") {
			t.Errorf("edited text does not say who decided where:\n%s", edit.Form["text"])
		}
		if rows, ok := tgKeyboard(t, edit); !ok || len(rows) != 0 {
			t.Errorf("edit keeps buttons %v (reply_markup sent: %v), want them removed", rows, ok)
		}
		if n := len(tg.Find("sendMessage", func(c chatCall) bool { return strings.Contains(c.Form["text"], id) })); n != 1 {
			t.Errorf("%d Telegram messages about %s, want 1", n, id)
		}

		// The Slack copy of the same decision is closed by the workflow's
		// notice: the first click wins across channels.
		upd := await(t, sl, "the Slack copy of "+id+" closed", "chat.update", func(c chatCall) bool {
			return strings.Contains(c.Form["text"], id)
		})
		if !strings.Contains(upd.Form["text"], "telegram:42") || len(slackButtons(t, upd)) != 0 {
			t.Errorf("Slack copy closed as %q with buttons %v, want it to name telegram:42 without buttons", upd.Form["text"], slackButtons(t, upd))
		}
	})

	t.Run("SlackSignedAdminApproves", func(t *testing.T) {
		const id = "T-2026-702"
		start(id)
		post := await(t, sl, "the plan approval of "+id+" posted to Slack", "chat.postMessage", func(c chatCall) bool {
			return strings.Contains(c.Form["text"], id) && c.Form["blocks"] != ""
		})
		if post.Form["channel"] != slackChannel {
			t.Errorf("posted to channel %q, want %s", post.Form["channel"], slackChannel)
		}
		buttons := slackButtons(t, post)
		var approve slackButton
		labels := map[string]bool{}
		for _, b := range buttons {
			labels[strings.Fields(b.Label)[0]] = true
			if b.ActionID == "ampflow_opt_approve" {
				approve = b
			}
		}
		if len(buttons) != 2 || !labels["Approve"] || !labels["Reject"] || approve.Value == "" {
			t.Fatalf("buttons %+v, want one Approve and one Reject", buttons)
		}
		msgTS := post.NewID
		payload := map[string]any{
			"type":       "block_actions",
			"user":       map[string]any{"id": "U1", "username": "admin"},
			"channel":    map[string]any{"id": slackChannel},
			"container":  map[string]any{"type": "message", "channel_id": slackChannel, "message_ts": msgTS},
			"trigger_id": "trigger-e2e",
			"actions": []map[string]any{{
				"type": "button", "block_id": approve.BlockID, "action_id": approve.ActionID,
				"value": approve.Value, "action_ts": "1772366500.000001",
			}},
		}
		endpoint := "http://" + p.api + slackInteract

		if code := postInteraction(t, endpoint, "not-the-secret", payload); code != http.StatusUnauthorized {
			t.Errorf("a forged signature got %d, want 401", code)
		}
		st, err := tasks.State(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != task.StatusAwaitingApproval || len(st.Decided) != 0 {
			t.Fatalf("after a forged click: status %s, decided %+v; want awaiting_approval, nothing decided", st.Status, st.Decided)
		}

		if code := postInteraction(t, endpoint, slackSecret, payload); code != http.StatusOK {
			t.Fatalf("a signed click got %d, want 200", code)
		}
		st = waitStatus(t, tasks, id, task.StatusDispatched)
		checkDecided(t, st, "slack:U1", "slack")
		upd := await(t, sl, "the Slack message of "+id+" edited", "chat.update", func(c chatCall) bool {
			return c.Form["ts"] == msgTS
		})
		if !strings.Contains(upd.Form["text"], "slack:U1") || len(slackButtons(t, upd)) != 0 {
			t.Errorf("Slack message closed as %q with buttons %v, want it to name slack:U1 without buttons", upd.Form["text"], slackButtons(t, upd))
		}
		if eph := sl.Find("chat.postEphemeral", nil); len(eph) != 0 {
			t.Errorf("ephemeral messages %+v, want none: the forged click must have no effect", eph)
		}

		// Telegram's copy of the same decision now refuses a press.
		tgPost := await(t, tg, "the plan approval of "+id+" posted to Telegram", "sendMessage", func(c chatCall) bool {
			rows, ok := tgKeyboard(t, c)
			return ok && len(rows) > 0 && strings.Contains(c.Form["text"], id)
		})
		tg.Push(pressed("cq-late", 42, tgOption(t, tgPost, "Approve", "Reject")))
		ans := await(t, tg, "the answer to a late press", "answerCallbackQuery", func(c chatCall) bool {
			return c.Form["callback_query_id"] == "cq-late"
		})
		if !strings.Contains(strings.ToLower(ans.Form["text"]), "already decided") || !strings.Contains(ans.Form["text"], "slack:U1") {
			t.Errorf("a late Telegram press was answered %q, want already decided by slack:U1", ans.Form["text"])
		}
		st, err = tasks.State(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		checkDecided(t, st, "slack:U1", "slack")
	})

	if u := unserved(tg, sl); len(u) > 0 {
		t.Errorf("the bots called API methods the fakes do not serve: %v", u)
	}
	if out := p.output(); strings.Contains(out, "bot api") || strings.Contains(out, "editing decided message") {
		t.Errorf("the chat bots logged API errors:\n%s", out)
	}
}

// tgOption checks the keyboard of a posted decision has exactly one
// button a row, labelled with labels in order, and returns the callback
// data of the first.
func tgOption(t *testing.T, c chatCall, labels ...string) string {
	t.Helper()
	rows, _ := tgKeyboard(t, c)
	if len(rows) != len(labels) {
		t.Fatalf("keyboard %+v, want %d rows: %v", rows, len(labels), labels)
	}
	for i, row := range rows {
		if len(row) != 1 || !strings.HasPrefix(row[0].Text, labels[i]) || row[0].CallbackData == "" {
			t.Fatalf("keyboard row %d is %+v, want one %s button", i, row, labels[i])
		}
	}
	return rows[0][0].CallbackData
}

// checkDecided checks the task recorded one decision: its plan approved
// by who in channel.
func checkDecided(t *testing.T, st task.State, by, channel string) {
	t.Helper()
	if len(st.Decided) != 1 {
		t.Fatalf("decided %+v, want exactly one outcome", st.Decided)
	}
	o := st.Decided[0]
	if o.Kind != task.KindPlanApproval || o.Option != decision.OptApprove || o.By != by || o.Channel != channel {
		t.Errorf("outcome %+v, want plan_approval approved by %s via %s", o, by, channel)
	}
}
