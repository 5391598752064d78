package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

// twoTasksOneBranch starts two tasks on one branch: the second waits in
// awaiting_lease (listed by status, shown by task show) and gets its
// dispatch only once the first is done.
func twoTasksOneBranch(t *testing.T, p *devProc, exec, rev *apiClient) {
	coord := exec.on(t).as("coord-secret-0123456789ab")
	a := &agent{t: t, repo: gitRepo(t)}
	start := func() string {
		var started struct {
			TaskID string `json:"task_id"`
		}
		if code := coord.do("POST", "/v1/tasks", map[string]any{"plan": lowRiskPlan(a.repo)}, &started); code >= 300 {
			t.Fatalf("task start: %d", code)
		}
		return started.TaskID
	}
	state := func(id string) task.State {
		var st task.State
		if code := exec.do("GET", "/v1/tasks/"+id, nil, &st); code != 200 {
			t.Fatalf("GET /v1/tasks/%s: %d", id, code)
		}
		return st
	}
	first := start()
	d1 := exec.inbox(amp.RoleExecutor, first, amp.TypeTaskDispatch)
	if st := state(first); st.Lease == nil || !strings.HasPrefix(st.Lease.ResourceKey, "repo:") || !strings.HasSuffix(st.Lease.ResourceKey, ":feature/e2e") {
		t.Fatalf("%s holds %+v, want the lease of its branch", first, st.Lease)
	}

	second := start()
	eventually(t, 30*time.Second, second+" awaiting_lease behind "+first, func() (bool, error) {
		st := state(second)
		return st.Status == task.StatusAwaitingLease && st.LeaseHolder == first, fmt.Errorf("status %s, holder %q", st.Status, st.LeaseHolder)
	})
	eventually(t, 30*time.Second, second+" listed as awaiting_lease", func() (bool, error) {
		var list httpapi.ListResponse
		coord.do("GET", "/v1/tasks?status=awaiting_lease", nil, &list)
		return slices.ContainsFunc(list.Tasks, func(s workflows.TaskSummary) bool { return s.TaskID == second }), fmt.Errorf("%+v", list.Tasks)
	})
	show := mustRun(t, cliEnv(p, "coord-secret-0123456789ab", "planner"), "task", "show", second)
	if !strings.Contains(show, "awaiting_lease") || !strings.Contains(show, first+" holds the branch") {
		t.Fatalf("task show %s:\n%s", second, show)
	}
	list := mustRun(t, cliEnv(p, "coord-secret-0123456789ab", "planner"), "task", "list", "--status", "awaiting_lease")
	if !strings.Contains(list, second) || strings.Contains(list, first) {
		t.Fatalf("task list --status awaiting_lease:\n%s", list)
	}

	// The first runs to done; the second is not dispatched meanwhile.
	if code := exec.do("POST", "/v1/acks", map[string]string{"msg_id": d1.MsgID, "as": "executor"}, nil); code >= 300 {
		t.Fatalf("ACK: %d", code)
	}
	if code := exec.do("POST", "/v1/messages", a.work(d1, "hello.txt", "hello\n"), nil); code != 202 {
		t.Fatalf("result: %d", code)
	}
	req := rev.inbox(amp.RoleReviewer, first, amp.TypeReviewRequest)
	if st := state(second); st.Status != task.StatusAwaitingLease || st.Rounds != 0 {
		t.Fatalf("%s while %s is in review: status %s, rounds %d", second, first, st.Status, st.Rounds)
	}
	if code := rev.do("POST", "/v1/acks", map[string]string{"msg_id": req.MsgID, "as": "reviewer"}, nil); code >= 300 {
		t.Fatalf("review ACK: %d", code)
	}
	if code := rev.do("POST", "/v1/messages", a.verdict(req, amp.DecisionApproved), nil); code != 202 {
		t.Fatalf("verdict: %d", code)
	}
	exec.inbox(amp.RoleExecutor, second, amp.TypeTaskDispatch)
	done := state(first)
	if done.Status != task.StatusDone || done.Lease != nil {
		t.Fatalf("%s when %s was dispatched: status %s, lease %+v; want done without a lease", first, second, done.Status, done.Lease)
	}
	ended := statusAt(done, task.StatusDone)
	st := state(second)
	dispatched := statusAt(st, task.StatusDispatched)
	if ended.IsZero() || !dispatched.After(ended) {
		t.Fatalf("%s dispatched at %s, not after %s ended at %s", second, dispatched, first, ended)
	}
	if st.Lease == nil || st.LeaseHolder != "" || st.Underlying() != task.StatusDispatched {
		t.Fatalf("%s after the handover: status %s, lease %+v, holder %q", second, st.Status, st.Lease, st.LeaseHolder)
	}
	t.Logf("%s ended %s; %s dispatched %s later", first, ended.Format(time.RFC3339Nano), second, dispatched.Sub(ended))
	if code := coord.do("POST", "/v1/tasks/"+second+"/cancel", map[string]string{"reason": "done with the test"}, nil); code >= 300 {
		t.Fatalf("cancel %s: %d", second, code)
	}
}

// statusAt is when st's timeline entered status s; zero if never.
func statusAt(st task.State, s task.Status) time.Time {
	for _, e := range st.Timeline {
		if e.Kind == "status" && e.Status == s {
			return e.At
		}
	}
	return time.Time{}
}

// newBranch makes branch in repo off main and returns its name: tasks on
// branches of their own do not wait for each other's branch lease.
func newBranch(t *testing.T, repo, branch string) string {
	t.Helper()
	git(t, repo, "branch", branch, "main")
	return branch
}
