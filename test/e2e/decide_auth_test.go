package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workers"
	"github.com/ampflow/ampflow/workflows"
)

// TestRawDecideRefused: a Temporal client on the host sends the decide
// update straight to a task, naming the admin, as anything that reaches
// the frontend can. The workflow refuses it as forbidden, keeps the
// attempt in the error log, and the plan approval stays open; the same
// answer through the API (the CLI) is taken. `ampflow dev` made the
// decision key in data_dir, readable by its user only, and the key is
// nowhere in the task's history.
func TestRawDecideRefused(t *testing.T) {
	me, err := user.Current()
	if err != nil || me.Username == "" {
		t.Skipf("no operating-system user name: %v", err)
	}
	p := startDev(t, t.TempDir(), "AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin")
	keyFile := filepath.Join(p.dataDir, workers.DecisionKeyFile)
	st, err := os.Stat(keyFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("decision key file %s: %v, mode %v; want 0600", keyFile, err, st.Mode().Perm())
	}

	repo := gitRepo(t)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(mustJSON(t, lowRiskPlan(repo))))
	stdout, stderr, code := cli(t, p, nil, "task", "start", "-f", planFile)
	if code != 0 {
		t.Fatalf("task start: exit %d\n%s%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	id := lines[len(lines)-1]
	tasks := dial(t, p)
	var before task.State
	eventually(t, 30*time.Second, "the plan approval", func() (bool, error) {
		before, err = tasks.State(t.Context(), id)
		return err == nil && before.Pending != nil, err
	})
	d := before.Pending

	// A raw update, as `temporal workflow update execute --name decide`
	// or any SDK client sends it: the admin's name, the right digest.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	raw := decision.Answer{DecisionID: d.ID, Digest: d.Digest, Option: decision.OptApprove, By: me.Username, Channel: "cli",
		At: time.Now(), Signature: strings.Repeat("0", 64)}
	h, err := tasks.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: task.WorkflowID(id), UpdateName: task.UpdateDecide, Args: []any{raw},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	var te *task.Error
	if !errors.As(workflows.WrapError(err, "decide", time.Second, "ampflow"), &te) || te.Code != task.CodeForbidden {
		t.Fatalf("raw decide update: %v; want a forbidden refusal", err)
	}
	after, err := tasks.State(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Pending == nil || after.Pending.ID != d.ID || len(after.Decided) != 0 || after.Status != task.StatusAwaitingApproval {
		t.Fatalf("after the raw update: %s, pending %+v, decided %+v; want %s still open", after.Status, after.Pending, after.Decided, d.ID)
	}
	refusals, err := openSSOT(t, p.dataDir).TaskRefusals(t.Context(), id, 10)
	if err != nil || len(refusals) != 1 || refusals[0].Source != activities.ErrorSourceDecide || !strings.Contains(refusals[0].Reason, d.ID) {
		t.Errorf("refusals of %s: %+v, %v; want the raw answer kept", id, refusals, err)
	}

	stdout, stderr, code = cli(t, p, nil, "decide", id, "--option", "approve")
	if code != 0 || !strings.Contains(stdout, "approve by "+me.Username+";") {
		t.Fatalf("decide through the API: exit %d\n%s%s", code, stdout, stderr)
	}
	waitStatus(t, tasks, id, task.StatusDispatched)

	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	hist := historyBytes(t, tasks, task.WorkflowID(id))
	hexKey := strings.TrimSpace(string(key))
	rawKey, err := decision.ParseKey(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(hist, []byte(hexKey)) || bytes.Contains(hist, rawKey) {
		t.Error("the decision key is in the task's history")
	}
	if n := bytes.Count(hist, []byte(`"ActivityType":"VerifyAnswer"`)); n != 2 {
		t.Errorf("%d VerifyAnswer local activities in the task's history, want 2 (the raw answer, the CLI's)", n)
	}
}

// TestRawAgentInputRefused: a Temporal client on the host sends a task
// the executor's result as an admin and a recovered heartbeat, as any
// SDK client can, unsigned. Both are refused and kept in the error log;
// the task still waits for its result, with nothing sent again to the
// executor. The same result through the client, signed, is taken.
func TestRawAgentInputRefused(t *testing.T) {
	p := startDev(t, t.TempDir())
	repo := gitRepo(t)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(mustJSON(t, lowRiskPlan(repo))))
	stdout, stderr, code := cli(t, p, nil, "task", "start", "-f", planFile)
	if code != 0 {
		t.Fatalf("task start: exit %d\n%s%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	id := lines[len(lines)-1]
	tasks := dial(t, p)
	a := &agent{t: t, tasks: tasks, repo: repo}
	d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
	a.ack(d)
	waitStatus(t, tasks, id, task.StatusInProgress)
	m := a.work(d, "hello.txt", "hello\n")
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	h, err := tasks.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: task.WorkflowID(id), UpdateName: task.UpdateSubmit, Args: []any{task.SubmitInput{Raw: raw, By: "ops", Admin: true}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	var te *task.Error
	if !errors.As(workflows.WrapError(err, "submit", time.Second, "ampflow"), &te) || te.Code != task.CodeForbidden {
		t.Fatalf("raw submit as an admin: %v; want a forbidden refusal", err)
	}
	if err := tasks.Temporal.SignalWorkflow(ctx, task.WorkflowID(id), "", task.SignalHeartbeat,
		task.HeartbeatInput{From: amp.RoleExecutor, Recovered: true, By: "ops", Admin: true}); err != nil {
		t.Fatalf("raw recovered heartbeat: %v", err)
	}
	store := openSSOT(t, p.dataDir)
	var refusals []ssot.ErrorEntry
	eventually(t, 30*time.Second, "both raw inputs in the error log", func() (bool, error) {
		refusals, err = store.TaskRefusals(t.Context(), id, 10)
		return len(refusals) >= 2, err
	})
	var reasons []string
	for _, r := range refusals {
		reasons = append(reasons, r.Reason)
	}
	all := strings.Join(reasons, "\n")
	if len(refusals) != 2 || !strings.Contains(all, "command:"+task.UpdateSubmit) || !strings.Contains(all, "command:"+task.SignalHeartbeat) {
		t.Errorf("refusals of %s:\n%s\nwant the raw submit and the raw heartbeat", id, all)
	}
	after, err := tasks.State(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Underlying() != task.StatusInProgress || len(after.Outbox) != 0 || after.ResultChecked != "" {
		t.Fatalf("after the raw inputs: %s, outbox %+v, result checked %q; want in_progress, nothing sent again", after.Status, after.Outbox, after.ResultChecked)
	}
	if msgs, err := tasks.Inbox(t.Context(), amp.RoleExecutor); err != nil || len(msgs) != 0 {
		t.Fatalf("executor inbox after the raw heartbeat: %+v, %v; want empty", msgs, err)
	}

	a.send(m)
	waitStatus(t, tasks, id, task.StatusInReview)
}

// historyBytes is a workflow's history, every event in its wire form:
// payloads as they are stored.
func historyBytes(t *testing.T, c *workflows.Client, id string) []byte {
	t.Helper()
	it := c.Temporal.GetWorkflowHistory(t.Context(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []byte
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("reading the history of %s: %v", id, err)
		}
		b, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}
