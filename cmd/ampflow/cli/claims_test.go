package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// TestClaimsCLI: inbox --mine lists what the token ACKed and has not
// answered; task show names who holds the task's work; a send prints
// the task_result's warnings.
func TestClaimsCLI(t *testing.T) {
	waiting, held := inboxMessage(t), inboxMessage(t)
	held.MsgID, held.TaskID = "task_dispatch-T-2026-009-1", "T-2026-009"
	db := testSSOT(t, nil, []amp.Message{waiting})
	b, _ := json.Marshal(held)
	st := ssot.TaskState{TaskID: held.TaskID, Rev: 1, Status: string(task.StatusInProgress), StartedAt: testNow, UpdatedAt: testNow, State: json.RawMessage(`{}`),
		Outbox: []ssot.OutboxMessage{{MsgID: held.MsgID, TaskID: held.TaskID, Role: "executor", Type: string(held.Type), SentAt: testNow, Body: b,
			Holder: "codex", AckedAt: testNow}}}
	if _, err := db.Save(context.Background(), held.TaskID, nil, &st); err != nil {
		t.Fatal(err)
	}
	f := &fakeTasks{
		states: []task.State{{TaskID: "T-2026-009", Status: task.StatusInProgress,
			Holders: []task.Holder{{Role: amp.RoleExecutor, Agent: "codex", MsgID: held.MsgID, Since: testNow, Unanswered: &held}}}},
		submitRes: task.SubmitResult{MsgID: "task_result-T-2026-009-2", Status: task.StatusInProgress, Warnings: []string{"lines_added: claimed 1, git shows 3"}},
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Tasks: f, Store: db,
		Tokens: []config.AuthToken{{Token: "tok-exec", Role: amp.RoleExecutor, Name: "codex"}}}).Handler())
	t.Cleanup(srv.Close)
	run := func(args ...string) result {
		env := map[string]string{"AMPFLOW_API_URL": srv.URL, "AMPFLOW_API_TOKEN": "tok-exec"}
		var stdout, stderr strings.Builder
		code := Main(context.Background(), Options{Args: args, Stdout: &stdout, Stderr: &stderr,
			LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		return result{code, stdout.String(), stderr.String()}
	}

	r := run("inbox", "--as", "executor", "--mine", "-o", "json")
	wantExit(t, r, ExitOK)
	var msgs []amp.Message
	if err := json.Unmarshal([]byte(r.stdout), &msgs); err != nil || len(msgs) != 1 || msgs[0].MsgID != held.MsgID {
		t.Errorf("inbox --mine: %s (%v), want %s alone", r.stdout, err, held.MsgID)
	}
	r = run("inbox", "--as", "executor", "-o", "json")
	wantExit(t, r, ExitOK)
	if strings.Contains(r.stdout, held.MsgID) {
		t.Errorf("inbox without --mine lists the held message: %s", r.stdout)
	}

	r = run("task", "show", "T-2026-009")
	wantExit(t, r, ExitOK)
	if !strings.Contains(r.stdout, "codex (executor, working), took "+held.MsgID) {
		t.Errorf("task show does not name the holder:\n%s", r.stdout)
	}

	r = run("send", "--type", "task_result", "--task", "T-2026-009", "-f", "testdata/result_payload.json")
	if r.code != ExitOK || !strings.Contains(r.stdout, "warning: diff_summary does not match git: lines_added: claimed 1, git shows 3") {
		t.Errorf("send: exit %d, stdout %q, stderr %q; want the warning", r.code, r.stdout, r.stderr)
	}
}
