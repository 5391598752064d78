package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

// TestSweepAfterOutsideTermination: a task's workflow terminated by hand
// in Temporal never saves its end, so the sweep clears its open decision
// from the listing and marks it terminated in the task list.
func TestSweepAfterOutsideTermination(t *testing.T) {
	p := startDev(t, t.TempDir(), "AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin", "AMPFLOW_SSOT_SWEEP_INTERVAL=1s")
	tasks := dial(t, p)
	plan, _ := json.Marshal(lowRiskPlan(gitRepo(t)))
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(plan))
	stdout, stderr, code := cli(t, p, nil, "task", "start", "-f", planFile)
	if code != 0 {
		t.Fatalf("task start: exit %d\n%s%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	id := lines[len(lines)-1]
	listed := func() string {
		out, errOut, code := cli(t, p, nil, "-o", "json", "pending")
		if code != 0 {
			t.Fatalf("pending: exit %d\n%s", code, errOut)
		}
		return out
	}
	eventually(t, 30*time.Second, "the plan approval listed", func() (bool, error) { return strings.Contains(listed(), id+"-d1"), nil })

	if err := tasks.Temporal.TerminateWorkflow(t.Context(), task.WorkflowID(id), "", "by hand"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the decision of the terminated task cleared", func() (bool, error) { return !strings.Contains(listed(), id), nil })
	out, errOut, code := cli(t, p, nil, "-o", "json", "task", "list")
	var list []struct {
		TaskID string `json:"task_id"`
		Status string `json:"status"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Status != string(task.StatusTerminated) {
		t.Errorf("task list: exit %d, %s%s; want %s terminated", code, out, errOut, id)
	}
}
