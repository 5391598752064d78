package repomesh

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

func TestTestResultRetriesThenBugTask(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.store.Save(ctx, "T-2026-001", nil, &ssot.TaskState{TaskID: "T-2026-001", Rev: 1, Status: "in_progress",
		State: json.RawMessage(`{"repo":"/src/app","branch":"feature/login"}`), StartedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.deliver(t, "T-2026-001", "bob", amp.RoleReviewer)
	result := func(i int, failing ...string) string {
		var fs []string
		for _, f := range failing {
			fs = append(fs, fmt.Sprintf(`{"test":%q,"error":"timeout","message":"Expected 401, got timeout after 30s"}`, f))
		}
		return fmt.Sprintf(`{"id":"R%d","type":"test.result","severity":"info","payload":{"task_id":"T-2026-001","suite_name":"e2e/auth",
			"passed":15,"failed":%d,"skipped":0,"duration_ms":4521,"failures":[%s]}}`, i, len(failing), strings.Join(fs, ","))
	}
	var waits []int64
	for i := 1; i <= 4; i++ {
		failing := []string{"login_with_invalid_credentials"}
		if i == 2 {
			failing = append(failing, "password_reset_flow")
		}
		h.do(t, "POST", "/v1/events", bobToken, result(i, failing...)).want(t, 201, nil)
		// a retried post changes nothing
		h.do(t, "POST", "/v1/events", bobToken, result(i, failing...)).want(t, 201, nil)
		res, err := h.store.Event(ctx, fmt.Sprintf("R%d", i))
		if err != nil {
			t.Fatal(err)
		}
		e, err := h.store.Event(ctx, retryID(res))
		if i == 4 {
			if err == nil {
				t.Fatalf("a retry after the schedule's last: %s", e.Payload)
			}
			continue
		}
		if err != nil || e.Type != TypeTestRetry || e.To != "bob" {
			t.Fatalf("retry %d: %+v %v", i, e, err)
		}
		var p struct {
			RetryAfterMS int64             `json:"retry_after_ms"`
			Attempt      int               `json:"attempt"`
			Tests        []string          `json:"tests"`
			Bugs         map[string]string `json:"bug_tasks"`
		}
		json.Unmarshal(e.Payload, &p)
		waits = append(waits, p.RetryAfterMS)
		if p.Attempt != i+1 || (i == 3) != (p.Bugs["login_with_invalid_credentials"] != "") {
			t.Errorf("retry %d: %s", i, e.Payload)
		}
	}
	if fmt.Sprint(waits) != "[1000 2000 4000]" {
		t.Fatalf("back-offs %v, want the document's 1s, 2s, 4s", waits)
	}
	if len(h.tasks.started) != 1 {
		t.Fatalf("bug tasks started %d, want 1 (the third failure of one test)", len(h.tasks.started))
	}
	in := h.tasks.started[0]
	if in.Handling != task.HandlingAdmin || in.Plan.Repo != "/src/app" || in.Plan.Branch != "feature/login" ||
		!strings.HasPrefix(in.Plan.Description, "Fix flaky test: login_with_invalid_credentials") ||
		in.Plan.TechConstraints["original_task_id"] != "T-2026-001" || in.Plan.TechConstraints["failure_count"] != BugAfter || in.RequestKey == "" ||
		in.Plan.RiskLevel != amp.RiskMedium || in.Plan.TechConstraints["priority"] != 2 {
		t.Fatalf("bug task %+v", in)
	}
}

func failingResult(id, taskID, test string) string {
	return fmt.Sprintf(`{"id":%q,"type":"test.result","severity":"info","payload":{"task_id":%q,"suite_name":"e2e/auth",
		"passed":15,"failed":1,"skipped":0,"duration_ms":4521,"failures":[{"test":%q,"error":"timeout","message":"timeout after 30s"}]}}`, id, taskID, test)
}

func TestTestResultBugTaskOfAMeshTask(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	// A task only the mesh knows: bob claimed it.
	h.do(t, "POST", "/v1/events", bobToken, `{"type":"task.claimed","severity":"info","payload":{"task_id":"mesh-task-7","agent_id":"bob","lease_ttl":60}}`).want(t, 201, nil)
	for i := 1; i <= BugAfter; i++ {
		h.do(t, "POST", "/v1/events", bobToken, failingResult(fmt.Sprintf("R%d", i), "mesh-task-7", "login")).want(t, 201, nil)
	}
	if len(h.tasks.started) != 0 {
		t.Fatalf("a task workflow started for a task without a repository: %+v", h.tasks.started)
	}
	evs, _, err := h.store.SearchEvents(ctx, ssot.SearchQuery{Type: "task.created", To: "bob"}, ssot.Page{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("bug tasks in bob's mesh: %d %v", len(evs), err)
	}
	var bug struct {
		TaskID   string         `json:"task_id"`
		Goal     string         `json:"goal"`
		Priority int            `json:"priority"`
		Risk     string         `json:"risk_level"`
		Assignee string         `json:"assignee"`
		Meta     map[string]any `json:"metadata"`
	}
	json.Unmarshal(evs[0].Payload, &bug)
	if bug.Goal != "Fix flaky test: login" || bug.Priority != 2 || bug.Risk != "medium" || bug.Assignee != "bob" ||
		bug.Meta["original_task_id"] != "mesh-task-7" || bug.Meta["test_suite"] != "e2e/auth" {
		t.Fatalf("bug task %s", evs[0].Payload)
	}
	res, err := h.store.Event(ctx, fmt.Sprintf("R%d", BugAfter))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := h.store.Event(ctx, retryID(res))
	if err != nil || !strings.Contains(string(retry.Payload), `"login":"`+bug.TaskID+`"`) {
		t.Fatalf("the retry names no bug task: %s %v", retry.Payload, err)
	}
}

func TestTestResultBugTaskFailureTellsTheSender(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.store.Save(ctx, "T-2026-001", nil, &ssot.TaskState{TaskID: "T-2026-001", Rev: 1, Status: "in_progress",
		State: json.RawMessage(`{"repo":"/src/app","branch":"feature/login"}`), StartedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.deliver(t, "T-2026-001", "bob", amp.RoleReviewer)
	h.tasks.err = fmt.Errorf("temporal is down")
	for i := 1; i <= BugAfter; i++ {
		h.do(t, "POST", "/v1/events", bobToken, failingResult(fmt.Sprintf("R%d", i), "T-2026-001", "login")).want(t, 201, nil)
	}
	evs, _, err := h.store.SearchEvents(ctx, ssot.SearchQuery{Type: TypeError, To: "bob"}, ssot.Page{})
	if err != nil || len(evs) != 1 || !strings.Contains(evs[0].Content, "temporal is down") {
		t.Fatalf("bob's agent.error: %+v %v", evs, err)
	}
}

func TestTestResultBugTasksOnlyFromTheTasksAgents(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.store.Save(ctx, "T-2026-001", nil, &ssot.TaskState{TaskID: "T-2026-001", Rev: 1, Status: "in_progress",
		State: json.RawMessage(`{"repo":"/src/app","branch":"feature/login"}`), StartedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.deliver(t, "T-2026-001", "bob", amp.RoleReviewer)
	t.Run("NotTheTasksAgent", func(t *testing.T) {
		// alice was delivered nothing of T-2026-001, and claiming it in
		// the mesh does not make her its agent: ampflow knows the task.
		h.do(t, "POST", "/v1/events", aliceToken, `{"type":"task.claimed","severity":"info","payload":{"task_id":"T-2026-001","agent_id":"alice","lease_ttl":60}}`).want(t, 201, nil)
		for i := 1; i <= BugAfter; i++ {
			var e struct {
				Error struct {
					Code   string
					Fields []amp.FieldError
				}
			}
			h.do(t, "POST", "/v1/events", aliceToken, failingResult(fmt.Sprintf("A%d", i), "T-2026-001", "login")).want(t, 403, &e)
			if e.Error.Code != string(CodePermissionDenied) || len(e.Error.Fields) != 1 || e.Error.Fields[0].Path != "payload.task_id" {
				t.Fatalf("refusal %+v", e.Error)
			}
		}
		if len(h.tasks.started) != 0 {
			t.Fatalf("alice's results started %d tasks", len(h.tasks.started))
		}
		// A passing result reports nothing to act on: it is kept.
		h.do(t, "POST", "/v1/events", aliceToken, `{"type":"test.result","severity":"info","payload":{"task_id":"T-2026-001","suite_name":"e2e/auth","passed":16,"failed":0,"skipped":0,"duration_ms":1,"failures":[]}}`).want(t, 201, nil)
		// An admin reports for any task.
		h.do(t, "POST", "/v1/events", adminToken, failingResult("ADM1", "T-2026-001", "admin_test")).want(t, 201, nil)
	})
	t.Run("Bounded", func(t *testing.T) {
		// Five new tests failing three times a batch: each result files
		// at most MaxBugsPerResult, the task's results MaxBugsPerTask.
		for b, want := range []int{3, 6, 9, 10, 10} {
			var fs []string
			for k := range 5 {
				fs = append(fs, fmt.Sprintf(`{"test":"t%d_%d","error":"e","message":"m"}`, b, k))
			}
			for i := 1; i <= BugAfter; i++ {
				h.do(t, "POST", "/v1/events", bobToken, fmt.Sprintf(`{"id":"B%d-%d","type":"test.result","severity":"info","payload":{"task_id":"T-2026-001",
					"suite_name":"unit","passed":0,"failed":5,"skipped":0,"duration_ms":1,"failures":[%s]}}`, b, i, strings.Join(fs, ","))).want(t, 201, nil)
			}
			if len(h.tasks.started) != want {
				t.Fatalf("batch %d: %d bug tasks started, want %d", b, len(h.tasks.started), want)
			}
		}
		res, err := h.store.Event(ctx, "B4-3")
		if err != nil {
			t.Fatal(err)
		}
		retry, err := h.store.Event(ctx, retryID(res))
		if err != nil || !strings.Contains(string(retry.Payload), `"bugs_not_filed":["t4_0"`) {
			t.Fatalf("the last retry names no tests left unfiled: %s %v", retry.Payload, err)
		}
	})
}
