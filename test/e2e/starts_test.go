package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// start posts a start request with the Idempotency-Key key, if any, and
// returns the status, the task id of a 201 and the error of any other
// answer; it reports to the test without stopping it, so a goroutine may
// call it.
func (c *apiClient) start(key string, req httpapi.StartRequest) (int, string, apiError) {
	b, err := json.Marshal(req)
	if err != nil {
		c.t.Error(err)
		return 0, "", apiError{}
	}
	if key != "" {
		c = c.with("Idempotency-Key", key)
	}
	code, body, err := c.raw("POST", "/v1/tasks", b)
	if err != nil {
		c.t.Errorf("POST /v1/tasks: %v", err)
		return 0, "", apiError{}
	}
	var ok httpapi.StartResponse
	var e struct {
		Error apiError `json:"error"`
	}
	if code == http.StatusCreated {
		if err := json.Unmarshal(body, &ok); err != nil {
			c.t.Errorf("decoding %s: %v", body, err)
		}
	} else if err := json.Unmarshal(body, &e); err != nil {
		c.t.Errorf("decoding %d %s: %v", code, body, err)
	}
	return code, ok.TaskID, e.Error
}

type apiError struct {
	Code    task.Code        `json:"code"`
	Message string           `json:"message"`
	Fields  []amp.FieldError `json:"fields"`
}

// taskIDs lists every task id visibility knows.
func taskIDs(t *testing.T, tasks workflows.Tasks) []string {
	t.Helper()
	list, err := tasks.List(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.TaskID
	}
	return ids
}

// TestStarts runs starts against one embedded server: a taken id is
// refused, concurrent starts get distinct ids, a retry with the same
// Idempotency-Key gets the first answer, the list is newest first, and a
// message for an ended task is told so.
func TestStarts(t *testing.T) {
	dir := t.TempDir()
	p := startDev(t, dir,
		"AMPFLOW_AUTH_TOKENS=alice-secret-0123456789ab:coordinator:alice,bob-secret-0123456789ab:coordinator:bob,exec-secret-0123456789ab:executor:codex")
	tasks := dial(t, p)
	alice := newAPIClient(t, p.api, "alice-secret-0123456789ab")
	bob := alice.as("bob-secret-0123456789ab")
	repo := gitRepo(t)
	plan, err := json.Marshal(lowRiskPlan(repo))
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "plan.json")
	writeFile(t, planFile, string(plan))

	t.Run("TakenID", func(t *testing.T) {
		if code, id, e := alice.start("", httpapi.StartRequest{TaskID: "T-2025-001", Plan: plan}); code != http.StatusCreated || id != "T-2025-001" {
			t.Fatalf("first start: %d %q %+v", code, id, e)
		}
		first := waitStatus(t, tasks, "T-2025-001", task.StatusDispatched)
		code, _, e := bob.start("", httpapi.StartRequest{TaskID: "T-2025-001", Plan: plan})
		if code != http.StatusConflict || e.Code != task.CodeConflict || !strings.Contains(e.Message, "T-2025-001") {
			t.Errorf("second start over HTTP: %d %+v; want 409 conflict naming the id", code, e)
		}
		stdout, stderr, exit := cliAs(t, p, "alice-secret-0123456789ab", nil, "task", "start", "-f", planFile, "--task-id", "T-2025-001")
		if exit != 1 || !strings.Contains(stderr, "T-2025-001") || strings.Contains(stdout, "started") {
			t.Errorf("CLI start under a taken id: exit %d, stdout %q, stderr %q; want exit 1 naming the id", exit, stdout, stderr)
		}
		_, stderr, exit = cliAs(t, p, "alice-secret-0123456789ab", nil, "-o", "json", "task", "start", "-f", planFile, "--task-id", "T-2025-001")
		var je struct {
			Error apiError `json:"error"`
		}
		if exit != 1 || json.Unmarshal([]byte(stderr), &je) != nil || je.Error.Code != task.CodeConflict {
			t.Errorf("CLI -o json start under a taken id: exit %d, stderr %q; want a JSON conflict", exit, stderr)
		}
		st, err := tasks.State(t.Context(), "T-2025-001")
		if err != nil || !st.StartedAt.Equal(first.StartedAt) || st.Underlying() != task.StatusDispatched {
			t.Errorf("T-2025-001 is now %s started %s (%v); want the first task untouched", st.Status, st.StartedAt, err)
		}
	})

	t.Run("RefusedIDIsFree", func(t *testing.T) {
		// A branch the repository lacks, without create_branch: the
		// worker refuses the start, and Temporal has it failed.
		missing := lowRiskPlan(repo)
		missing.Branch = "feature/member-count"
		raw, err := json.Marshal(missing)
		if err != nil {
			t.Fatal(err)
		}
		if code, id, e := alice.start("", httpapi.StartRequest{TaskID: "T-2025-013", Plan: raw}); code != http.StatusCreated || id != "T-2025-013" {
			t.Fatalf("start on a missing branch: %d %q %+v", code, id, e)
		}
		st := waitStatus(t, tasks, "T-2025-013", task.StatusTerminated)
		if !strings.Contains(st.Reason, "refused") || !strings.Contains(st.Reason, "feature/member-count") {
			t.Errorf("reason %q, want the refusal naming the branch", st.Reason)
		}
		d, err := tasks.Temporal.DescribeWorkflowExecution(t.Context(), "T-2025-013", "")
		if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_FAILED {
			t.Fatalf("Temporal has T-2025-013 %v (%v), want failed", d.GetWorkflowExecutionInfo().GetStatus(), err)
		}
		err = tasks.Temporal.GetWorkflow(t.Context(), "T-2025-013", "").Get(t.Context(), nil)
		var app *temporal.ApplicationError
		var r task.Refusal
		if !errors.As(err, &app) || app.Type() != task.ErrRefused || app.Details(&r) != nil || r.Field != "plan.branch" {
			t.Errorf("the workflow ended with %v (%+v), want a TaskRefused naming plan.branch", err, r)
		}
		// The id is free: the plan that makes its branch starts under it,
		// and the SSOT's list has the new task, not the refused one.
		if code, id, e := bob.start("", httpapi.StartRequest{TaskID: "T-2025-013", Plan: raw, CreateBranch: true}); code != http.StatusCreated || id != "T-2025-013" {
			t.Fatalf("start again under the refused id: %d %q %+v", code, id, e)
		}
		waitStatus(t, tasks, "T-2025-013", task.StatusDispatched)
		eventually(t, 30*time.Second, "T-2025-013 listed as dispatched", func() (bool, error) {
			var list httpapi.ListResponse
			alice.do("GET", "/v1/tasks?status=dispatched", nil, &list)
			return slices.ContainsFunc(list.Tasks, func(s workflows.TaskSummary) bool { return s.TaskID == "T-2025-013" }), fmt.Errorf("%+v", list.Tasks)
		})
		if code, _, e := alice.start("", httpapi.StartRequest{TaskID: "T-2025-013", Plan: plan}); code != http.StatusConflict {
			t.Errorf("a third start under T-2025-013, running: %d %+v; want 409", code, e)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		const n = 64
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				code, id, e := alice.start("", httpapi.StartRequest{Plan: plan})
				if code != http.StatusCreated {
					t.Errorf("start %d: %d %+v", i, code, e)
				}
				ids[i] = id
			})
		}
		wg.Wait()
		slices.Sort(ids)
		if d := slices.Compact(slices.Clone(ids)); len(d) != n {
			t.Fatalf("%d starts got %d distinct ids: %v", n, len(d), ids)
		}
		eventually(t, 30*time.Second, "64 new tasks in the list", func() (bool, error) {
			all := taskIDs(t, tasks)
			for _, id := range ids {
				if !slices.Contains(all, id) {
					return false, nil
				}
			}
			return true, nil
		})
		for _, id := range ids {
			if st, err := tasks.State(t.Context(), id); err != nil || st.TaskID != id {
				t.Errorf("task %s answers as %q: %v", id, st.TaskID, err)
			}
		}
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		code, first, e := alice.start("plan-7", httpapi.StartRequest{Plan: plan})
		if code != http.StatusCreated {
			t.Fatalf("first start: %d %+v", code, e)
		}
		if code, id, e := alice.start("plan-7", httpapi.StartRequest{Plan: plan}); code != http.StatusCreated || id != first {
			t.Errorf("retry: %d %q %+v; want 201 %s", code, id, e, first)
		}
		// Concurrent retries of a new request all get one task.
		got := make([]string, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				code, id, e := alice.start("plan-8", httpapi.StartRequest{Plan: plan})
				if code != http.StatusCreated {
					t.Errorf("concurrent retry %d: %d %+v", i, code, e)
				}
				got[i] = id
			})
		}
		wg.Wait()
		if len(slices.Compact(slices.Sorted(slices.Values(got)))) != 1 || got[0] == first {
			t.Errorf("concurrent retries with one key answered %v; want one new task", got)
		}
		code, _, e = alice.start("plan-7", httpapi.StartRequest{Plan: plan, Handling: task.HandlingAdmin})
		if code != http.StatusConflict || e.Code != task.CodeConflict || !hasPath(e.Fields, "Idempotency-Key") || !strings.Contains(e.Message, first) {
			t.Errorf("the key with another body: %d %+v; want 409 naming Idempotency-Key and %s", code, e, first)
		}
		if code, id, e := bob.start("plan-7", httpapi.StartRequest{Plan: plan}); code != http.StatusCreated || id == first {
			t.Errorf("bob's plan-7: %d %q %+v; want a task of his own", code, id, e)
		}
		// With a task id: the retry gets the first answer, a start without the key the conflict.
		if code, id, e := alice.start("plan-9", httpapi.StartRequest{TaskID: "T-2025-002", Plan: plan}); code != http.StatusCreated || id != "T-2025-002" {
			t.Fatalf("start of T-2025-002: %d %q %+v", code, id, e)
		}
		if code, id, e := alice.start("plan-9", httpapi.StartRequest{TaskID: "T-2025-002", Plan: plan}); code != http.StatusCreated || id != "T-2025-002" {
			t.Errorf("retry of T-2025-002: %d %q %+v", code, id, e)
		}
		if code, _, e := alice.start("", httpapi.StartRequest{TaskID: "T-2025-002", Plan: plan}); code != http.StatusConflict {
			t.Errorf("T-2025-002 without the key: %d %+v; want 409", code, e)
		}
		if code, _, e := alice.start("two words", httpapi.StartRequest{Plan: plan}); code != http.StatusBadRequest || !hasPath(e.Fields, "Idempotency-Key") {
			t.Errorf("a key with a space: %d %+v; want 400 naming Idempotency-Key", code, e)
		}
		// The CLI: the same --idempotency-key twice, one task.
		out1, stderr, exit := cliAs(t, p, "alice-secret-0123456789ab", nil, "task", "start", "-f", planFile, "--idempotency-key", "cli-1")
		if exit != 0 {
			t.Fatalf("CLI start: exit %d, %s", exit, stderr)
		}
		cliID := lastLine(out1)
		eventually(t, 30*time.Second, cliID+" in the list", func() (bool, error) {
			return slices.Contains(taskIDs(t, tasks), cliID), nil
		})
		before := len(taskIDs(t, tasks))
		out2, stderr, exit := cliAs(t, p, "alice-secret-0123456789ab", nil, "task", "start", "-f", planFile, "--idempotency-key", "cli-1")
		if exit != 0 || lastLine(out2) != cliID {
			t.Errorf("CLI retry: exit %d, stdout %q, stderr %q; want %s again", exit, out2, stderr, cliID)
		}
		if after := len(taskIDs(t, tasks)); after != before {
			t.Errorf("the CLI retry made %d more tasks", after-before)
		}
	})

	t.Run("ListNewestFirst", func(t *testing.T) {
		// An ended task started after a running one must still list first.
		if code, _, e := alice.start("", httpapi.StartRequest{TaskID: "T-2025-003", Plan: plan}); code != http.StatusCreated {
			t.Fatalf("start: %d %+v", code, e)
		}
		if code, body := alice.on(t).call("POST", "/v1/tasks/T-2025-003/cancel", httpapi.CancelRequest{Reason: "list order"}, nil); code != http.StatusOK {
			t.Fatalf("cancel: %d %s", code, body)
		}
		var list []workflows.TaskSummary
		eventually(t, 30*time.Second, "T-2025-003 ended in the list", func() (bool, error) {
			var err error
			list, err = tasks.List(t.Context(), "", 0)
			for _, s := range list {
				if s.TaskID == "T-2025-003" {
					return !s.Running, err
				}
			}
			return false, err
		})
		if !slices.IsSortedFunc(list, func(a, b workflows.TaskSummary) int { return b.StartedAt.Compare(a.StartedAt) }) {
			t.Errorf("task list is not newest first: %v", list)
		}
		if list[0].TaskID != "T-2025-003" {
			t.Errorf("newest task listed first is %s, want T-2025-003", list[0].TaskID)
		}
		stdout, stderr, exit := cliAs(t, p, "alice-secret-0123456789ab", nil, "-o", "json", "task", "list", "--limit", "1")
		var cliList []workflows.TaskSummary
		if exit != 0 || json.Unmarshal([]byte(stdout), &cliList) != nil || len(cliList) != 1 || cliList[0].TaskID != "T-2025-003" {
			t.Errorf("task list --limit 1: exit %d, %q %q; want T-2025-003", exit, stdout, stderr)
		}
	})

	t.Run("TaskEnded", func(t *testing.T) {
		exec := alice.on(t).as("exec-secret-0123456789ab")
		// On a branch of its own: the tasks above still running hold theirs.
		own := lowRiskPlan(repo)
		own.Branch = newBranch(t, repo, "feature/T-2025-004")
		plan, err := json.Marshal(own)
		if err != nil {
			t.Fatal(err)
		}
		if code, _, e := alice.start("", httpapi.StartRequest{TaskID: "T-2025-004", Plan: plan}); code != http.StatusCreated {
			t.Fatalf("start: %d %+v", code, e)
		}
		d := exec.inbox(amp.RoleExecutor, "T-2025-004", amp.TypeTaskDispatch)
		if code, body := alice.on(t).call("POST", "/v1/tasks/T-2025-004/cancel", httpapi.CancelRequest{Reason: "plan withdrawn"}, nil); code != http.StatusOK {
			t.Fatalf("cancel: %d %s", code, body)
		}
		eventually(t, 30*time.Second, "T-2025-004 closed", func() (bool, error) {
			list, err := tasks.List(t.Context(), "", 0)
			for _, s := range list {
				if s.TaskID == "T-2025-004" {
					return !s.Running, err
				}
			}
			return false, err
		})
		ack := amp.NewAck(amp.RoleExecutor, d, time.Now())
		for _, c := range []struct {
			path string
			body any
		}{
			{"/v1/messages", ack},
			{"/v1/heartbeats", httpapi.HeartbeatRequest{TaskID: "T-2025-004", From: amp.RoleExecutor, Note: "still here"}},
			{"/v1/acks", httpapi.AckRequest{MsgID: d.MsgID}},
		} {
			code, body := exec.call("POST", c.path, c.body, nil)
			var e struct {
				Error apiError `json:"error"`
			}
			_ = json.Unmarshal(body, &e)
			if code != http.StatusConflict || e.Error.Code != "task_ended" || !strings.Contains(e.Error.Message, string(task.StatusTerminated)) {
				t.Errorf("POST %s for an ended task: %d %s; want 409 task_ended naming terminated", c.path, code, body)
			}
		}
		ackFile := filepath.Join(dir, "ack.json")
		raw, _ := json.Marshal(ack)
		if err := os.WriteFile(ackFile, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, exit := cliAs(t, p, "exec-secret-0123456789ab", nil, "-o", "json", "send", "-f", ackFile)
		var je struct {
			Error apiError `json:"error"`
		}
		if exit != 1 || json.Unmarshal([]byte(stderr), &je) != nil || je.Error.Code != "task_ended" {
			t.Errorf("CLI send for an ended task: exit %d, stderr %q; want exit 1 with task_ended", exit, stderr)
		}
		_, stderr, exit = cliAs(t, p, "exec-secret-0123456789ab", nil, "ack", d.MsgID, "--as", "executor")
		if exit != 1 || !strings.Contains(stderr, "terminated") {
			t.Errorf("CLI ack for an ended task: exit %d, stderr %q; want exit 1 naming terminated", exit, stderr)
		}
		never := httpapi.HeartbeatRequest{TaskID: "T-2025-999", From: amp.RoleExecutor}
		if code, body := exec.call("POST", "/v1/heartbeats", never, nil); code != http.StatusNotFound {
			t.Errorf("a heartbeat for a task that never was: %d %s; want 404", code, body)
		}
	})
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func hasPath(fields []amp.FieldError, path string) bool {
	for _, f := range fields {
		if f.Path == path {
			return true
		}
	}
	return false
}
