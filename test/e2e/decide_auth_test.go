package e2e

import (
	"bytes"
	"context"
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
	"github.com/ampflow/ampflow/workers"
	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/decision"
	"github.com/ampflow/ampflow/workflows/task"
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
