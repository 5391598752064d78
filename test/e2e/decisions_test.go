package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TestDecisionsAcrossRestart runs the decision engine through a kill -9
// of `ampflow dev`: an approval towards a quorum of two survives it and
// the second admin's approval decides; a decision nobody answers is
// reminded, escalated and expired on time although the process was down
// when the reminder fell due, each step once.
func TestDecisionsAcrossRestart(t *testing.T) {
	// Most of its time is the wait for Temporal to give up on the killed
	// worker's sticky queue; it runs beside the other tests that wait so.
	t.Parallel()
	p := startDev(t, t.TempDir(),
		"AMPFLOW_AUTH_TOKENS=tok-ana-0123456789ab:admin:ana,tok-bob-0123456789ab:admin:bob,tok-plan-0123456789ab:coordinator:planner",
		"AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin",
		"AMPFLOW_POLICY_QUORUM_LOW=2",
		"AMPFLOW_POLICY_DECISIONS_REMIND_AFTER=4s",
		"AMPFLOW_POLICY_DECISIONS_ESCALATE_AFTER=8s",
		"AMPFLOW_POLICY_DECISIONS_EXPIRE_AFTER=60s",
	)
	tasks := dial(t, p)
	repo := gitRepo(t)
	plan, _ := json.Marshal(lowRiskPlan(repo))
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(plan))
	start := func() string {
		stdout, stderr, code := cliAs(t, p, "tok-plan-0123456789ab", nil, "task", "start", "-f", planFile)
		if code != 0 {
			t.Fatalf("task start: exit %d\n%s%s", code, stdout, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		return lines[len(lines)-1]
	}
	pending := func(id string) *decision.Decision {
		var st task.State
		eventually(t, 30*time.Second, "the plan approval of "+id, func() (bool, error) {
			var err error
			st, err = tasks.State(t.Context(), id)
			return err == nil && st.Pending != nil, err
		})
		return st.Pending
	}

	quorum, unanswered := start(), start()
	d := pending(quorum)
	if d.Required != 2 || d.Digest == "" || d.ExpiresAt.IsZero() {
		t.Fatalf("plan approval %+v; want 2 approvals required, a digest and an expiry", d)
	}
	late := pending(unanswered)
	stdout, stderr, code := cliAs(t, p, "tok-ana-0123456789ab", nil, "decide", quorum, "--option", "approve")
	if code != 0 || !strings.Contains(stdout, "1 of 2 approvals: ana") {
		t.Fatalf("ana's approval: exit %d, want 1 of 2 approvals\n%s%s", code, stdout, stderr)
	}

	p.kill()
	t.Log("ampflow dev killed with SIGKILL; restarting")
	p.restart()
	// The first read of each task after the crash waits for Temporal to
	// give up on the dead worker's sticky queue.
	eventually(t, 90*time.Second, "the tasks answering after the restart", func() (bool, error) {
		for _, id := range []string{quorum, unanswered} {
			if _, err := tasks.State(t.Context(), id); err != nil {
				return false, nil
			}
		}
		return true, nil
	})

	// ana's approval was kept: hers again counts once, bob's decides.
	stdout, stderr, code = cliAs(t, p, "tok-ana-0123456789ab", nil, "decide", quorum, "--option", "approve")
	if code != 0 || !strings.Contains(stdout, "1 of 2 approvals: ana") {
		t.Fatalf("ana again after the restart: exit %d, want still 1 of 2\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = cliAs(t, p, "tok-bob-0123456789ab", nil, "decide", quorum, "--option", "approve")
	if code != 0 {
		t.Fatalf("bob's approval: exit %d\n%s%s", code, stdout, stderr)
	}
	st := waitStatus(t, tasks, quorum, task.StatusDispatched)
	if n := len(st.Decided); n == 0 || !approvedBy(st.Decided[n-1], "ana", "bob") {
		t.Errorf("decided %+v; want the plan approved by ana and bob", st.Decided)
	}
	_, stderr, code = cliAs(t, p, "tok-bob-0123456789ab", nil, "-o", "json", "decide", "--decision", d.ID, "--digest", d.Digest, "--option", "approve")
	if code != 1 || !strings.Contains(stderr, `"code":"decided"`) || !strings.Contains(stderr, "ana") {
		t.Errorf("a third answer: exit %d, %s; want 1 and decided, naming the approvers", code, stderr)
	}

	// The unanswered plan: reminded, escalated, then rejected by expiry.
	st = waitStatus(t, tasks, unanswered, task.StatusTerminated)
	n := len(st.Decided)
	if n == 0 || st.Decided[n-1].Channel != decision.ChannelExpiry || st.Decided[n-1].Option != decision.OptReject {
		t.Fatalf("decided %+v; want the plan rejected by expiry", st.Decided)
	}
	// The task has ended; a late answer still hears who closed it.
	_, stderr, code = cliAs(t, p, "tok-bob-0123456789ab", nil, "-o", "json", "decide", "--decision", late.ID, "--digest", late.Digest, "--option", "approve")
	if code != 1 || !strings.Contains(stderr, `"code":"decided"`) || !strings.Contains(stderr, "ampflow via expiry") {
		t.Errorf("an answer after expiry: exit %d, %s; want 1 and decided by ampflow via expiry", code, stderr)
	}
	ids := historyIDs(t, p, unanswered)
	for _, step := range []string{"-reminder", "-escalated", "-outcome"} {
		if c := countSuffix(ids, step); c != 1 {
			t.Errorf("history of %s has %d records ending %s, want 1: %v", unanswered, c, step, ids)
		}
	}
}

func approvedBy(o decision.Outcome, names ...string) bool {
	var by []string
	for _, a := range o.Approvers {
		by = append(by, a.By)
	}
	slices.Sort(by)
	return o.Option == decision.OptApprove && slices.Equal(by, names)
}

// historyIDs reads the ids of a task's SSOT records through the CLI.
func historyIDs(t *testing.T, p *devProc, id string) []string {
	t.Helper()
	stdout, stderr, code := cliAs(t, p, "tok-ana-0123456789ab", nil, "-o", "json", "task", "history", id, "--all")
	if code != 0 {
		t.Fatalf("task history: exit %d\n%s", code, stderr)
	}
	var recs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(stdout), &recs); err != nil {
		t.Fatalf("task history -o json: %v\n%s", err, stdout)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	return ids
}

func countSuffix(ids []string, suffix string) int {
	n := 0
	for _, id := range ids {
		if strings.HasSuffix(id, suffix) {
			n++
		}
	}
	return n
}
