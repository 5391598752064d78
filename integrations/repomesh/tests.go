package repomesh

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

// TypeTestRetry is the event ampflow sends an agent whose test.result
// reported failures: run the failed tests again after retry_after_ms.
const TypeTestRetry = "test.retry"

// RetrySchedule is the document's back-off before each retry of a failed
// test: after its first, second and third failure.
var RetrySchedule = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

// BugAfter is the failure of one test that files a bug task.
const BugAfter = 3

// Bounds of the bug tasks test results file: one test.result files at
// most MaxBugsPerResult, and a task's results MaxBugsPerTask in all (as
// its test.retry events name them). A test past either bound is named in
// the retry's bugs_not_filed.
const (
	MaxBugsPerResult = 3
	MaxBugsPerTask   = 10
)

// mayReportTests reports whether the caller may post a test.result with
// failures for its task: a coordinator, an admin, or one of the task's
// own agents (see isTaskAgent); false means the answer was written, 403
// PERMISSION_DENIED naming payload.task_id.
func (a *API) mayReportTests(w http.ResponseWriter, r *http.Request, ev checked) bool {
	c := httpapi.CallerOf(r)
	failures, _ := ev.payload["failures"].([]any)
	if ev.taskID == "" || len(failures) == 0 || isAdmin(c) || c.Role == amp.RoleCoordinator {
		return true
	}
	ok, err := a.isTaskAgent(r.Context(), selfNames(c), ev.taskID)
	if err != nil {
		a.srv.Error(w, r, err)
		return false
	}
	if !ok {
		problem := fmt.Sprintf("%s is not an agent of task %s: only its agents, coordinators and admins report its failing tests", c.Name, ev.taskID)
		a.tellError(r, "event.log", CodePermissionDenied, "payload.task_id: "+problem, 0, map[string]any{"task_id": ev.taskID})
		a.srv.Error(w, r, httpapi.FieldError(CodePermissionDenied, "payload.task_id", problem))
	}
	return ok
}

// bugsFiled counts the bug tasks the task's earlier results filed, as
// their test.retry events name them; the retry of e itself (a retried
// post) is not counted.
func (a *API) bugsFiled(r *http.Request, e ssot.MeshEvent) (int, error) {
	retries, _, err := a.store.SearchEvents(r.Context(), ssot.SearchQuery{Type: TypeTestRetry, From: Sender, TaskID: e.TaskID},
		ssot.Page{Limit: maxResults})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rt := range retries {
		var p struct {
			Bugs map[string]string `json:"bug_tasks"`
		}
		if rt.ID != retryID(e) && json.Unmarshal(rt.Payload, &p) == nil {
			n += len(p.Bugs)
		}
	}
	return n, nil
}

// maxResults bounds the test.result events of a task read to count a
// test's failures.
const maxResults = MaxEventLimit

type testResult struct {
	SuiteName string `json:"suite_name"`
	Failures  []struct {
		Test    string `json:"test"`
		Error   string `json:"error"`
		Message string `json:"message"`
	} `json:"failures"`
}

// onTestResult answers a stored test.result with failures: each failing
// test's failures are counted over the task's results so far; a test.retry
// event goes to the reporter with the schedule's back-off, and the
// BugAfter-th failure of a test files a bug task, a plan that waits for an
// admin's approval, linked to the original task. Ids and the start's
// request key derive from the event, so a retried post does neither twice.
func (a *API) onTestResult(r *http.Request, e ssot.MeshEvent) {
	var res testResult
	if json.Unmarshal(e.Payload, &res) != nil || len(res.Failures) == 0 || e.TaskID == "" {
		return
	}
	prior, _, err := a.store.SearchEvents(r.Context(), ssot.SearchQuery{Type: "test.result", TaskID: e.TaskID}, ssot.Page{Limit: maxResults})
	if err != nil {
		a.log.Error("counting test failures", "task_id", e.TaskID, "error", err)
		return
	}
	counts := map[string]int{}
	for _, p := range prior {
		if p.Seq > e.Seq {
			continue
		}
		var pr testResult
		if json.Unmarshal(p.Payload, &pr) != nil || pr.SuiteName != res.SuiteName {
			continue
		}
		seen := map[string]bool{}
		for _, f := range pr.Failures {
			if !seen[f.Test] {
				seen[f.Test] = true
				counts[f.Test]++
			}
		}
	}
	filed, err := a.bugsFiled(r, e)
	if err != nil {
		a.log.Error("counting a task's bug tasks", "task_id", e.TaskID, "error", err)
		return
	}
	var tests, notFiled []string
	attempt := 0
	bugs := map[string]string{}
	for _, f := range res.Failures {
		if slices.Contains(tests, f.Test) {
			continue
		}
		tests = append(tests, f.Test)
		n := counts[f.Test]
		attempt = max(attempt, n)
		if n == BugAfter && (len(bugs) >= MaxBugsPerResult || filed+len(bugs) >= MaxBugsPerTask) {
			notFiled = append(notFiled, f.Test)
			continue
		}
		if n == BugAfter {
			id, err := a.fileBug(r, e, res.SuiteName, f.Test, f.Message)
			if err != nil {
				a.log.Error("filing a bug task", "task_id", e.TaskID, "test", f.Test, "error", err)
				continue
			}
			bugs[f.Test] = id
		}
	}
	if attempt < 1 || attempt > len(RetrySchedule) {
		return
	}
	wait := RetrySchedule[attempt-1]
	payload := map[string]any{"from": Sender, "from_id": Sender, "to": e.From, "task_id": e.TaskID,
		"suite_name": res.SuiteName, "tests": tests, "attempt": attempt + 1, "retry_after_ms": wait.Milliseconds(),
		"not_before": e.CreatedAt.Add(wait).UTC(), "parent_message_id": e.ID}
	if len(bugs) > 0 {
		payload["bug_tasks"] = bugs
	}
	if len(notFiled) > 0 {
		a.log.Warn("bug tasks not filed: the bounds are reached", "task_id", e.TaskID, "tests", notFiled,
			"per_result", MaxBugsPerResult, "per_task", MaxBugsPerTask)
		payload["bugs_not_filed"] = notFiled
	}
	body, _ := json.Marshal(payload)
	retry := ssot.MeshEvent{ID: retryID(e), Type: TypeTestRetry, Severity: "warning", AgentID: Sender, From: Sender,
		FromID: Sender, To: e.From, Subject: fmt.Sprintf("Retry %s (attempt %d)", res.SuiteName, attempt+1),
		Content: strings.Join(tests, "\n"), ParentID: e.ID, TaskID: e.TaskID, CreatedAt: a.now(), Payload: body}
	if _, err := a.store.AppendEvent(r.Context(), retry); err != nil {
		a.log.Error("storing a test.retry event", "task_id", e.TaskID, "error", err)
	}
}

// retryID is the id of the test.retry answering the stored result e: a
// system event's, derived from e's place in the log, so a retried post
// answers it once.
func retryID(e ssot.MeshEvent) string {
	return fmt.Sprintf("%sretry-%d", ssot.SystemEventPrefix, e.Seq)
}

// BugPriority is the document's priority of a bug task, and BugRisk the
// risk level a task of that priority gets.
const (
	BugPriority = 2
	BugRisk     = amp.RiskMedium
)

// fileBug files the document's bug task for a test that failed BugAfter
// times: a task on the original task's repository and branch, waiting
// for an admin to approve its plan; a task known only in the mesh (no
// repository and branch in the SSOT) gets a task.created event in the
// mesh, assigned to the reporter. On failure the reporter gets an
// agent.error.
func (a *API) fileBug(r *http.Request, e ssot.MeshEvent, suite, test, message string) (string, error) {
	id, err := a.startBug(r, e, suite, test, message)
	if err != nil {
		a.tellErrorTo(r, e.From, "test.result", task.CodeUnavailable,
			fmt.Sprintf("filing the bug task for %s failed: %v", test, err), 0, map[string]any{"task_id": e.TaskID, "test": test})
	}
	return id, err
}

func (a *API) startBug(r *http.Request, e ssot.MeshEvent, suite, test, message string) (string, error) {
	goal := "Fix flaky test: " + test
	desc := fmt.Sprintf("Test failed %d times with: %s", BugAfter, truncate(message, 500))
	meta := map[string]any{"original_task_id": e.TaskID, "failure_count": BugAfter, "test_suite": suite,
		"priority": BugPriority, "test_result": e.ID}
	var st struct {
		Repo   string `json:"repo"`
		Branch string `json:"branch"`
	}
	orig, err := a.store.Task(r.Context(), e.TaskID)
	switch {
	case errors.Is(err, ssot.ErrNotFound):
	case err != nil:
		return "", err
	default:
		if err := json.Unmarshal(orig.State, &st); err != nil {
			return "", fmt.Errorf("reading task %s: %w", e.TaskID, err)
		}
	}
	if st.Repo == "" || st.Branch == "" || a.tasks == nil {
		return a.meshBug(r, e, goal, desc, suite, test, meta)
	}
	plan := amp.TaskDispatch{
		Description: goal + ". " + desc, Repo: st.Repo, Branch: st.Branch, RiskLevel: BugRisk,
		Subtasks:           []amp.Subtask{{SubtaskID: "S1", Description: goal + " (" + suite + ")", EstimatedLines: 20}},
		AcceptanceCriteria: []string{fmt.Sprintf("%s in %s passes %d runs in a row", test, suite, BugAfter)},
		TechConstraints:    meta,
	}
	in := task.Input{Plan: plan, Handling: task.HandlingAdmin, Coordinator: Sender,
		RequestKey: workflows.RequestKey(Sender, "bug:"+e.TaskID+":"+suite+":"+test)}
	return a.tasks.StartNext(r.Context(), in, a.now().Year())
}

// meshBug files a bug task as the mesh's task.created event, the
// document's bug report, assigned to the test's reporter. Its ids derive
// from the task, suite and test: a retried result files it once.
func (a *API) meshBug(r *http.Request, e ssot.MeshEvent, goal, desc, suite, test string, meta map[string]any) (string, error) {
	sum := sha256.Sum256([]byte(e.TaskID + "\x00" + suite + "\x00" + test))
	id := "BUG-" + hex.EncodeToString(sum[:8])
	payload, _ := json.Marshal(map[string]any{"from": Sender, "from_id": Sender, "to": e.From, "task_id": id,
		"goal": goal, "description": desc, "priority": BugPriority, "risk_level": BugRisk, "assignee": e.From,
		"metadata": meta, "parent_message_id": e.ID})
	_, err := a.store.AppendEvent(r.Context(), ssot.MeshEvent{ID: ssot.SystemEventPrefix + "created-" + id, Type: "task.created", Severity: "warning",
		AgentID: Sender, From: Sender, FromID: Sender, To: e.From, Subject: goal, Content: desc, ParentID: e.ID,
		TaskID: id, CreatedAt: a.now(), Payload: payload})
	if err != nil {
		return "", fmt.Errorf("storing the bug task %s: %w", id, err)
	}
	return id, nil
}
