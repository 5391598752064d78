package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// TestPolicyFromWorker starts a task with the CLI under a client
// configuration looser than the worker's: no plan approval at low risk and
// an admin of its own. The task runs by the worker's policy, records it
// first, and the CLI, a client of the tokenless API, decides as the API's
// own user: the operating-system user that `ampflow dev` names its admin.
func TestPolicyFromWorker(t *testing.T) {
	me, err := user.Current()
	if err != nil || me.Username == "" {
		t.Skipf("no operating-system user name: %v", err)
	}
	p := startDev(t, t.TempDir(), "AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin")
	want := fmt.Sprintf("%-10s %s (the operating-system user; no admins configured)", "admin", me.Username)
	if !strings.Contains(p.output(), want) {
		t.Errorf("ampflow dev did not name the admin at start; want %q in:\n%s", want, p.output())
	}

	// The coordinator's own configuration, read by the CLI.
	t.Setenv("AMPFLOW_POLICY_PLAN_APPROVAL_LOW", "auto")
	t.Setenv("AMPFLOW_ADMINS", "mallory")
	repo := gitRepo(t)
	plan, _ := json.Marshal(lowRiskPlan(repo))
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(plan))
	stdout, stderr, code := cli(t, p, nil, "task", "start", "-f", planFile)
	if code != 0 {
		t.Fatalf("task start: exit %d\n%s%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	id := lines[len(lines)-1]

	tasks := dial(t, p)
	var st task.State
	eventually(t, 30*time.Second, "a pending decision or a dispatch", func() (bool, error) {
		st, err = tasks.State(t.Context(), id)
		return err == nil && (st.Pending != nil || st.Status != task.StatusAwaitingApproval), err
	})
	if st.Pending == nil || st.Pending.Kind != task.KindPlanApproval {
		t.Fatalf("task %s is %s, pending %+v; want the plan approval of the worker's policy", id, st.Status, st.Pending)
	}

	_, stderr, code = cli(t, p, nil, "decide", id, "--option", "approve", "--by", "mallory")
	if code != 2 || !strings.Contains(stderr, "unknown flag: --by") {
		t.Errorf("decide --by mallory: exit %d, %q; want 2, unknown flag: --by", code, stderr)
	}
	stdout, stderr, code = cli(t, p, nil, "decide", id, "--option", "approve")
	if code != 0 || !strings.Contains(stdout, "approve by "+me.Username+";") {
		t.Fatalf("decide: exit %d, want 0 and a decision by %s\n%s%s", code, me.Username, stdout, stderr)
	}
	waitStatus(t, tasks, id, task.StatusDispatched)

	in := firstRecord(t, p, id)
	if in.Policy.PlanApproval.Low != task.HandlingAdmin || strings.Join(in.Policy.Admins, ",") != me.Username {
		t.Errorf("first SSOT record has plan approval %+v and admins %q; want the worker's: admin, %s",
			in.Policy.PlanApproval, in.Policy.Admins, me.Username)
	}
}

// firstRecord reads the first record of a task's SSOT chain: the plan and
// the policy in effect.
func firstRecord(t *testing.T, p *devProc, id string) task.Input {
	t.Helper()
	recs, _, err := openSSOT(t, p.dataDir).History(context.Background(), id, ssot.Page{Limit: 1})
	if err != nil || len(recs) != 1 {
		t.Fatalf("the first record of %s: %v", id, err)
	}
	rec := recs[0]
	var in task.Input
	if rec.ID != "plan-"+id {
		t.Fatalf("first record %s, want plan-%s", rec.ID, id)
	}
	if err := json.Unmarshal(rec.Body, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestWorkerRefusesNoAdmins runs `ampflow worker` with no admin
// configured: it exits 1 naming the admins setting, before it dials
// Temporal. With admins: ["*"] but no decision key it exits 1 naming the
// key; with both it gets past those checks.
func TestWorkerRefusesNoAdmins(t *testing.T) {
	run := func(env ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(binary, "worker")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "AMPFLOW_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		dir := t.TempDir()
		cmd.Env = append(cmd.Env, append(env, "AMPFLOW_DATA_DIR="+dir,
			fmt.Sprintf("AMPFLOW_TEMPORAL_ADDRESS=127.0.0.1:%d", freePort(t)), "AMPFLOW_HTTP_ADDR=127.0.0.1:0")...)
		cmd.Dir = dir
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("running ampflow worker: %v", err)
		}
		return errOut.String(), code
	}
	stderr, code := run()
	if code != 1 || !strings.Contains(stderr, "admins:") || !strings.Contains(stderr, `admins: ["*"]`) {
		t.Errorf("worker with no admins: exit %d, stderr %q; want 1 naming admins", code, stderr)
	}
	if strings.Contains(stderr, "Temporal") {
		t.Errorf("worker with no admins dialed Temporal first: %q", stderr)
	}
	stderr, code = run("AMPFLOW_ADMINS=*")
	if code != 1 || !strings.Contains(stderr, "AMPFLOW_AUTH_DECISION_KEY") || !strings.Contains(stderr, "auth.decision_key_file") || strings.Contains(stderr, "Temporal") {
		t.Errorf("worker with admins but no decision key: exit %d, stderr %q; want 1 naming the key, before Temporal", code, stderr)
	}
	stderr, code = run("AMPFLOW_ADMINS=*", "AMPFLOW_AUTH_DECISION_KEY="+strings.Repeat("ab", 32))
	if code == 0 || strings.Contains(stderr, "admins:") || !strings.Contains(stderr, "Temporal") {
		t.Errorf(`worker with admins: ["*"]: exit %d, stderr %q; want it past the admins check, failing to reach Temporal`, code, stderr)
	}
}
