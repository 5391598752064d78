package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/slack/slacktest"
)

// The checks of the scale-out test on the SSOT every worker keeps in one
// PostgreSQL database.

// checkStoredOnce reads each task's history through every worker's API:
// each worker answers the same records in the same order, and the task's
// records are those of one round, each once.
func (c *scaleCluster) checkStoredOnce(t *testing.T, ids []string) {
	for _, id := range ids {
		var first []string
		for n, api := range c.apis {
			if !c.workers[n].running() {
				continue
			}
			recs := historyAt(t, api, id)
			seen, counts := map[string]int{}, map[string]int{}
			var order []string
			for _, r := range recs {
				seen[r.ID]++
				counts[recordKey(r)]++
				order = append(order, r.ID)
			}
			for rid, k := range seen {
				if k > 1 {
					t.Errorf("%s: record %s is %d times in the history at worker %d", id, rid, k, n)
				}
			}
			for k, want := range lifecycleRecords() {
				if counts[k] != want {
					t.Errorf("%s: %d %s records at worker %d, want %d (all: %v)", id, counts[k], k, n, want, counts)
				}
			}
			if first == nil {
				first = order
			} else if !slices.Equal(first, order) {
				t.Errorf("%s: worker %d answers the history %v, another worker %v", id, n, order, first)
			}
		}
	}
	c.logf("every history the same at every worker, each record once")
}

// historyAt reads the whole history of id through api, page by page.
func historyAt(t *testing.T, api *apiClient, id string) []ssot.Record {
	t.Helper()
	var all []ssot.Record
	cursor := ""
	for page := 0; page < 100; page++ {
		var h httpapi.HistoryResponse
		path := "/v1/tasks/" + id + "/history?limit=1000"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		if code, resp := api.call("GET", path, nil, &h); code != http.StatusOK {
			t.Fatalf("history of %s at %s: %d %s", id, api.base, code, resp)
		}
		all = append(all, h.Records...)
		if cursor = h.NextCursor; cursor == "" {
			return all
		}
	}
	t.Fatalf("history of %s at %s: more than 100 pages", id, api.base)
	return nil
}

// checkAuditVerify runs `ampflow audit verify` on the shared SSOT: it
// passes, then fails naming the task once a row of one task is edited in
// the database behind ampflow's back.
func (c *scaleCluster) checkAuditVerify(t *testing.T, tampered string) {
	env := append(os.Environ(), "AMPFLOW_SSOT_URL="+c.dbs.ssot, "AMPFLOW_API_URL=http://"+c.workers[0].api,
		"AMPFLOW_AUTH_DECISION_KEY="+c.decisionKey)
	out, errOut, code := runAmpflow(t, env, nil, "audit", "verify")
	if code != 0 {
		t.Fatalf("ampflow audit verify exited %d:\n%s%s", code, out, errOut)
	}
	c.logf("ampflow audit verify passes")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.dbs.ssot)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The table is the store's (activities/ssot/migrations).
	tag, err := conn.Exec(ctx, `UPDATE records SET body = replace(body, 'hello', 'HELLO')
		WHERE task_id = $1 AND seq = (SELECT max(seq) FROM records WHERE task_id = $1 AND body LIKE '%hello%')`, tampered)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("editing a record of %s: %v (%d rows)", tampered, err, tag.RowsAffected())
	}
	out, errOut, code = runAmpflow(t, env, nil, "audit", "verify")
	if code != 1 || !strings.Contains(out+errOut, tampered) {
		t.Errorf("after a record of %s was edited, ampflow audit verify exited %d, want 1 naming the task:\n%s%s", tampered, code, out, errOut)
	}
}

// checkChatClickElsewhere has worker 0 alone post a plan approval to a
// fake Slack, then stops it: the admin's click, sent to worker 1, which
// never saw the message, is applied.
func (c *scaleCluster) checkChatClickElsewhere(t *testing.T) {
	sl := slacktest.New(t, slackToken)
	chat := []string{
		"AMPFLOW_SLACK_ENABLED=true",
		"AMPFLOW_SLACK_MODE=http",
		"AMPFLOW_SLACK_BOT_TOKEN=" + slackToken,
		"AMPFLOW_SLACK_SIGNING_SECRET=" + slackSecret,
		"AMPFLOW_SLACK_CHANNEL=" + slackChannel,
		"AMPFLOW_SLACK_ADMINS=U1",
		"AMPFLOW_SLACK_API_URL=" + sl.APIURL(),
		"AMPFLOW_POLICY_PLAN_APPROVAL_MEDIUM=admin",
	}
	poster, clicker := c.workers[0], c.workers[1]
	for _, w := range c.workers {
		w.stop()
	}
	poster.env = append(poster.env, chat...)
	clicker.env = append(clicker.env, chat...)
	poster.start()
	c.apis[0].reset()

	const id = "T-2026-999"
	c.apis[0].startTask(id, mediumRiskPlan(gitRepo(t)))
	post := await(t, sl, "the plan approval of "+id+" posted to Slack", "chat.postMessage", func(m chatCall) bool {
		return strings.Contains(m.Form["text"], id) && m.Form["blocks"] != ""
	})
	var approve slackButton
	for _, b := range slackButtons(t, post) {
		if b.ActionID == "ampflow_opt_approve" {
			approve = b
		}
	}
	if approve.Value == "" {
		t.Fatalf("no Approve button in %+v", slackButtons(t, post))
	}
	poster.stop()
	clicker.start()
	c.apis[1].reset()
	c.logf("plan approval of %s posted by worker 0, which is stopped; clicking at worker 1", id)

	payload := map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": "U1", "username": "admin"},
		"channel":    map[string]any{"id": slackChannel},
		"container":  map[string]any{"type": "message", "channel_id": slackChannel, "message_ts": post.NewID},
		"trigger_id": "trigger-scale",
		"actions": []map[string]any{{
			"type": "button", "block_id": approve.BlockID, "action_id": approve.ActionID,
			"value": approve.Value, "action_ts": fmt.Sprintf("%d.000001", time.Now().Unix()),
		}},
	}
	if code := postInteraction(t, "http://"+clicker.api+slackInteract, slackSecret, payload); code != http.StatusOK {
		t.Fatalf("the click at worker 1 got %d, want 200", code)
	}
	st := c.apis[1].waitFor(id, "dispatched", scaleStepWait, func(st task.State) bool { return st.Underlying() == task.StatusDispatched })
	checkDecided(t, st, "slack:U1", "slack")
	await(t, sl, "the Slack message of "+id+" edited by worker 1", "chat.update", func(m chatCall) bool {
		return m.Form["ts"] == post.NewID
	})
}
