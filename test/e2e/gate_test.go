package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	gateacts "github.com/ampflow/ampflow/activities/gate"
	"github.com/ampflow/ampflow/integrations/telegram/telegramtest"
)

const (
	gateTailorKey = "rs-amp-e2e-tailor-0123456789"
	gateSpendKey  = "rs-amp-e2e-spender-0123456789"
	gateSecret    = "e2e-gate-webhook-secret"
)

// gateEnv configures the action gate of `ampflow dev`: two agents, the
// webhooks of allow (a loopback one named with its port) allowed, a daily
// budget for the spender.
func gateEnv(allow string) []string {
	return []string{
		`AMPFLOW_GATE_AGENTS=[{"id":"resume-tailor","key_env":"E2E_TAILOR_KEY","projects":["job-search"]},{"id":"spender","key_env":"E2E_SPENDER_KEY"}]`,
		"E2E_TAILOR_KEY=" + gateTailorKey,
		"E2E_SPENDER_KEY=" + gateSpendKey,
		"AMPFLOW_GATE_WEBHOOK_SECRET=" + gateSecret,
		"AMPFLOW_GATE_WEBHOOK_ALLOW=" + allow,
		`AMPFLOW_PRICING_BUDGETS=[{"agent":"spender","period":"day","usd":0.035}]`,
	}
}

// TestGateAgentApprovedInTelegram runs examples/gate_agent.py, written
// from docs/gate.md alone, against `ampflow dev` with Telegram on the fake
// Bot API: the agent's signal answers pending, the gate is posted to
// Telegram, an admin approves it there, and the agent's webhook receives
// the signed callback. The same run_id posted again changes nothing.
func TestGateAgentApprovedInTelegram(t *testing.T) {
	tg := telegramtest.New(t, tgToken)
	port := freePort(t)
	env := append(gateEnv(fmt.Sprintf("127.0.0.1:%d", port)),
		"AMPFLOW_TELEGRAM_ENABLED=true",
		"AMPFLOW_TELEGRAM_TOKEN="+tgToken,
		"AMPFLOW_TELEGRAM_CHAT_ID="+tgChat,
		"AMPFLOW_TELEGRAM_ADMINS=42",
		"AMPFLOW_TELEGRAM_SERVER_URL="+tg.URL(),
	)
	p := startDev(t, t.TempDir(), env...)
	c := newAPIClient(t, p.api, "")

	hookURL := fmt.Sprintf("http://127.0.0.1:%d/amp/callback", port)
	runAgent := func(runID string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The agent holds its own callback secret, never the master.
		cmd := pythonCmd(ctx, t, "gate_agent.py", []string{"AMPFLOW_API_URL=http://" + p.api, "AMPFLOW_AGENT_KEY=" + gateTailorKey,
			"AMPFLOW_RUN_ID=" + runID, "AMPFLOW_WEBHOOK_SECRET=" + gateacts.CallbackSecret(gateSecret, "resume-tailor"),
			fmt.Sprintf("AMPFLOW_WEBHOOK_PORT=%d", port), "AMPFLOW_WAIT=90"})
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	const run = "run_e2e_gate_1"
	done := make(chan struct{})
	var out string
	var agentErr error
	go func() {
		defer close(done)
		out, agentErr = runAgent(run)
	}()

	post := await(t, tg, "the gate posted to Telegram", "sendMessage", func(c chatCall) bool {
		rows, ok := tgKeyboard(t, c)
		return ok && len(rows) > 0 && strings.Contains(c.Form["text"], "Send tailored resume to applicant")
	})
	for _, want := range []string{"resume-tailor", "job-search", run, "claude-sonnet-4-6", "Rewrote resume"} {
		if !strings.Contains(post.Form["text"], want) {
			t.Errorf("the Telegram post does not show %q:\n%s", want, post.Form["text"])
		}
	}
	// Pending, listed with every open decision and in the gate listing.
	var gates struct {
		Gates []struct {
			GateID string `json:"gate_id"`
			Status string `json:"status"`
		} `json:"gates"`
	}
	if code := c.do("GET", "/v1/gates?run_id="+run, nil, &gates); code != http.StatusOK || len(gates.Gates) != 1 || gates.Gates[0].Status != "pending" {
		t.Fatalf("GET /v1/gates?run_id: %d %+v", code, gates)
	}
	gateID := gates.Gates[0].GateID
	var pending struct {
		Decisions []struct {
			Subject string `json:"subject"`
		} `json:"decisions"`
	}
	if code := c.do("GET", "/v1/decisions", nil, &pending); code != http.StatusOK || len(pending.Decisions) != 1 || pending.Decisions[0].Subject != "gate-"+gateID {
		t.Errorf("GET /v1/decisions: %d %+v, want the gate's decision", code, pending)
	}

	// Agent spender, knowing only its own callback secret, forges the
	// approval for resume-tailor's run: the agent refuses it, as docs/gate.md
	// says, and keeps waiting.
	forged := []byte(fmt.Sprintf(`{"gate_id":%q,"status":"approved","run_id":%q,"agent_id":"resume-tailor","resolved_at":"2026-03-06T22:11:14Z","resolved_by":"telegram:42"}`, gateID, run))
	ts := fmt.Sprint(time.Now().Unix())
	req, _ := http.NewRequest("POST", hookURL, bytes.NewReader(forged))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-AMP-Timestamp", ts)
	req.Header.Set("X-AMP-Signature", gateacts.CallbackSignature(gateacts.CallbackSecret(gateSecret, "spender"), ts, "resume-tailor", run, hookURL, forged))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the forged callback: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}

	approve := tgOption(t, post, "Approve", "Reject")
	tg.Push(pressed("cq-gate-admin", 42, approve))
	ans := await(t, tg, "the answer to admin 42", "answerCallbackQuery", func(c chatCall) bool {
		return c.Form["callback_query_id"] == "cq-gate-admin"
	})
	if !strings.Contains(ans.Form["text"], "Recorded") {
		t.Errorf("admin 42 was answered %q", ans.Form["text"])
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the agent did not end within 2m")
	}
	if agentErr != nil || !strings.Contains(out, `"status": "approved"`) || !strings.Contains(out, "callback") || !strings.Contains(out, "telegram:42") {
		t.Fatalf("agent: %v\n%s\ndev:\n%s", agentErr, out, p.output())
	}

	var g struct {
		Status     string `json:"status"`
		ResolvedBy string `json:"resolved_by"`
		Callback   string `json:"callback"`
		Attempts   []struct {
			StatusCode int `json:"status_code"`
		} `json:"callback_attempts"`
	}
	eventually(t, 30*time.Second, "the callback recorded delivered", func() (bool, error) {
		code := c.do("GET", "/v1/gates/"+gateID, nil, &g)
		return code == http.StatusOK && g.Callback == "delivered", fmt.Errorf("%d %+v", code, g)
	})
	if g.Status != "approved" || g.ResolvedBy != "telegram:42" || len(g.Attempts) != 1 || g.Attempts[0].StatusCode != 204 {
		t.Fatalf("gate %+v", g)
	}
	if code := c.do("GET", "/v1/decisions", nil, &pending); code != http.StatusOK || len(pending.Decisions) != 0 {
		t.Errorf("decisions still open after the approval: %+v", pending)
	}

	// The same run again: the agent is told approved at once; no second
	// record, Telegram post or callback.
	posts := len(tg.Find("sendMessage", nil))
	out, err := runAgent(run)
	if err != nil || !strings.Contains(out, `"duplicate": true`) || strings.Contains(out, "callback {") {
		t.Fatalf("agent again: %v\n%s", err, out)
	}
	if n := len(tg.Find("sendMessage", nil)); n != posts {
		t.Errorf("%d Telegram posts after the duplicate, want %d", n, posts)
	}
	if code := c.do("GET", "/v1/gates?run_id="+run, nil, &gates); code != http.StatusOK || len(gates.Gates) != 1 {
		t.Errorf("gates of the run: %+v", gates)
	}
	c.do("GET", "/v1/gates/"+gateID, nil, &g)
	if len(g.Attempts) != 1 {
		t.Errorf("%d callback attempts after the duplicate, want 1", len(g.Attempts))
	}
}

// TestGateBudgetStopsSignals: a budget at 80 % gates every signal, and a
// spent budget refuses signals with 402; the refused signal is not recorded.
func TestGateBudgetStopsSignals(t *testing.T) {
	p := startDev(t, t.TempDir(), gateEnv("hooks.example.com")...)
	c := newAPIClient(t, p.api, "")
	signal := func(run string) (int, map[string]any) {
		body := map[string]any{
			"amp_version": "1.0", "agent_id": "spender", "run_id": run, "status": "completed",
			"summary": "Drafted a newsletter", "proposed_action": "Send it", "model": "claude-sonnet-4-6",
			"input_tokens": 1842, "output_tokens": 614, "cost_usd": 0.014736, "gate_required": false,
			"started_at": "2026-03-06T22:10:38Z", "completed_at": "2026-03-06T22:10:46Z",
		}
		code, resp := c.as(gateSpendKey).call("POST", "/amp/signal", body, nil)
		var out map[string]any
		_ = json.Unmarshal(resp, &out)
		return code, out
	}
	// $0.014736 each against $0.035 a day: the first is under 80 %, the
	// second reaches 80 % and is gated though the agent asked for none,
	// the third passes the budget, the fourth is refused.
	for i, want := range []int{200, 202, 202, 402} {
		code, out := signal(fmt.Sprintf("spend-%d", i))
		if code != want {
			t.Fatalf("signal %d answered %d %v, want %d", i, code, out, want)
		}
		if code == 402 {
			e, _ := out["error"].(map[string]any)
			if e["code"] != "budget_exceeded" || !strings.Contains(fmt.Sprint(e["message"]), "pricing.budgets[0]") {
				t.Fatalf("402 body %v", out)
			}
		}
	}
	var gates struct {
		Gates []struct {
			RunID   string   `json:"run_id"`
			Reasons []string `json:"reasons"`
		} `json:"gates"`
	}
	if code := c.do("GET", "/v1/gates?agent=spender", nil, &gates); code != http.StatusOK || len(gates.Gates) != 3 {
		t.Fatalf("gates of the spender: %+v", gates)
	}
	if r := gates.Gates[1].Reasons; gates.Gates[1].RunID != "spend-1" || len(r) != 1 || !strings.Contains(r[0], "pricing.budgets[0]") {
		t.Errorf("the gated signal's reasons %v, want the budget", r)
	}

	// An admin rejects the gate of spend-1 from the command line, as any
	// decision: ampflow pending lists it, ampflow decide answers it.
	out, errOut, code := cli(t, p, nil, "pending", "-o", "json")
	var open []struct {
		ID      string `json:"id"`
		Subject string `json:"subject"`
	}
	if err := json.Unmarshal([]byte(out), &open); code != 0 || err != nil || len(open) != 2 {
		t.Fatalf("ampflow pending: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	id := ""
	for _, d := range open {
		if strings.HasPrefix(d.Subject, "gate-") && gateRunOf(t, c, d.Subject) == "spend-1" {
			id = d.ID
		}
	}
	if id == "" {
		t.Fatalf("no open decision for the gate of spend-1: %+v", open)
	}
	if out, errOut, code := cli(t, p, nil, "decide", "--decision", id, "--option", "reject", "--note", "over budget"); code != 0 || !strings.Contains(out, "reject") {
		t.Fatalf("ampflow decide: exit %d\n%s%s", code, out, errOut)
	}
	eventually(t, 30*time.Second, "the gate of spend-1 rejected", func() (bool, error) {
		out, _, code := cli(t, p, nil, "gates", "list", "--run-id", "spend-1")
		return code == 0 && strings.Contains(out, "rejected"), fmt.Errorf("%s", out)
	})

	metrics := c.text("/metrics")
	for _, want := range []string{
		`ampflow_gate_signals_total{agent="spender",outcome="budget_exceeded"} 1`,
		`ampflow_gate_signals_total{agent="spender",outcome="pending"} 2`,
		`ampflow_gate_gates_opened_total 2`,
		`ampflow_gate_gates_resolved_total{status="rejected"} 1`,
		`ampflow_gate_cost_usd_total{agent="spender",project=""}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// An admin raises the spent budget for the day from the command line,
	// without a restart: the refused signal is taken.
	if out, errOut, code := cli(t, p, nil, "gates", "budgets"); code != 0 || !strings.Contains(out, "spender:*:day") || !strings.Contains(out, "exhausted") {
		t.Fatalf("ampflow gates budgets: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := cli(t, p, nil, "gates", "budgets", "raise", "spender:*:day", "1", "--note", "newsletter day"); code != 0 || !strings.Contains(out, "(ok)") {
		t.Fatalf("ampflow gates budgets raise: exit %d\n%s%s", code, out, errOut)
	}
	if code, out := signal("spend-3"); code != http.StatusOK {
		t.Fatalf("after the raise the signal answered %d %v", code, out)
	}
}

// gateRunOf reads the run id of a gate workflow's gate.
func gateRunOf(t *testing.T, c *apiClient, subject string) string {
	t.Helper()
	var g struct {
		RunID string `json:"run_id"`
	}
	if code := c.do("GET", "/v1/gates/"+strings.TrimPrefix(subject, "gate-"), nil, &g); code != http.StatusOK {
		t.Fatalf("GET /v1/gates of %s: %d", subject, code)
	}
	return g.RunID
}

// TestGateTaskBudgetSuspends: signals that name a task count against the
// budget_usd of its plan (tech_constraints); the one that passes it
// suspends the task with a critical escalation for an admin.
func TestGateTaskBudgetSuspends(t *testing.T) {
	p := startDev(t, t.TempDir(), gateEnv("hooks.example.com")...)
	c := newAPIClient(t, p.api, "")
	tasks := dial(t, p)
	plan := lowRiskPlan(gitRepo(t))
	plan.TechConstraints = map[string]any{"budget_usd": 0.02, "gate_agents": []string{"resume-tailor"}}
	var started struct {
		TaskID string `json:"task_id"`
	}
	if code := c.do("POST", "/v1/tasks", map[string]any{"plan": plan}, &started); code != http.StatusCreated {
		t.Fatalf("starting the task answered %d", code)
	}
	waitStatus(t, tasks, started.TaskID, "dispatched")
	post := func(run, taskID string) int {
		body := map[string]any{
			"amp_version": "1.0", "agent_id": "resume-tailor", "project_id": "job-search", "run_id": run, "task_id": taskID, "status": "completed",
			"summary": "Generated the greeting", "model": "claude-sonnet-4-6",
			"input_tokens": 1842, "output_tokens": 614, "cost_usd": 0.014736, "gate_required": false,
			"started_at": "2026-03-06T22:10:38Z", "completed_at": "2026-03-06T22:10:46Z",
		}
		code, _ := c.as(gateTailorKey).call("POST", "/v1/signals", body, nil)
		return code
	}
	if code := post("task-spend-0", "T-2026-999"); code != http.StatusBadRequest {
		t.Fatalf("a signal for an unknown task answered %d, want 400", code)
	}
	if code := post("task-spend-1", started.TaskID); code != http.StatusOK {
		t.Fatalf("first signal answered %d", code)
	}
	if st, err := tasks.State(context.Background(), started.TaskID); err != nil || st.Status != "dispatched" {
		t.Fatalf("under budget the task is %s (%v)", st.Status, err)
	}
	if code := post("task-spend-2", started.TaskID); code != http.StatusOK {
		t.Fatalf("second signal answered %d", code)
	}
	st := waitStatus(t, tasks, started.TaskID, "suspended")
	if st.Pending == nil || st.Pending.Kind != "agent_escalation" || !strings.Contains(st.Pending.Prompt, "budget exceeded") {
		t.Fatalf("pending %+v", st.Pending)
	}
}
