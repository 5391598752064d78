package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/integrations/goals"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// TestGoalJoin runs a goal of three tasks on a real `ampflow dev`: api and
// ui in parallel, then wire once both are done. The test plays the
// executor (each task in a worktree of its own branch) and the reviewer
// over the API; the goal ends done, wire's branch made after both ended.
func TestGoalJoin(t *testing.T) {
	repo := gitRepo(t)
	git(t, repo, "checkout", "-q", "main")
	dataDir := t.TempDir()
	p := startDev(t, dataDir)
	c := newAPIClient(t, p.api, "")
	plan := func(key string) map[string]any {
		return map[string]any{"description": "write " + key, "risk_level": "low",
			"subtasks":            []any{map[string]any{"subtask_id": "S1", "description": "write " + key + ".txt", "estimated_lines": 1}},
			"acceptance_criteria": []any{key + ".txt exists"}}
	}
	file := map[string]any{"description": "three files", "repo": repo, "tasks": []any{
		map[string]any{"key": "api", "plan": plan("api")},
		map[string]any{"key": "ui", "plan": plan("ui")},
		map[string]any{"key": "wire", "plan": plan("wire"), "blocked_by": []string{"api", "ui"}},
	}}
	var started goals.StartResponse
	if code, resp := c.call("POST", "/v1/goals", file, &started); code != http.StatusCreated {
		t.Fatalf("POST /v1/goals: %d %s", code, resp)
	}
	a := &agent{t: t}
	handled := map[string]bool{}
	var v goals.View
	deadline := time.Now().Add(90 * time.Second)
	for {
		if code := c.do("GET", "/v1/goals/"+started.GoalID, nil, &v); code != http.StatusOK {
			t.Fatalf("GET /v1/goals/%s: %d", started.GoalID, code)
		}
		if v.Status.Terminal() || time.Now().After(deadline) {
			break
		}
		for _, role := range []amp.Role{amp.RoleExecutor, amp.RoleReviewer} {
			var inbox struct {
				Messages []amp.Message `json:"messages"`
			}
			if code := c.do("GET", "/v1/inbox?role="+string(role)+"&wait=1s", nil, &inbox); code != http.StatusOK {
				t.Fatalf("inbox answered %d", code)
			}
			for _, m := range inbox.Messages {
				if handled[m.MsgID] {
					continue
				}
				handled[m.MsgID] = true
				if code, resp := c.call("POST", "/v1/acks", httpapi.AckRequest{MsgID: m.MsgID, As: m.To}, nil); code != http.StatusAccepted {
					t.Fatalf("ACK of %s: %d %s", m.MsgID, code, resp)
				}
				var reply amp.Message
				switch m.Type {
				case amp.TypeTaskDispatch:
					branch := m.Dispatch().Branch
					a.repo = filepath.Join(t.TempDir(), "wt")
					git(t, repo, "worktree", "add", "-q", a.repo, branch)
					key := branch[strings.LastIndex(branch, "/")+1:]
					reply = a.work(m, key+".txt", key+"\n")
				case amp.TypeReviewRequest:
					reply = a.verdict(m, amp.DecisionApproved)
				default:
					continue
				}
				c.submit("/v1/messages", mustJSON(t, reply))
			}
		}
	}
	if v.Status != goal.StatusDone {
		t.Fatalf("goal %s is %s (%s): %s", started.GoalID, v.Status, v.Reason, fmt.Sprintf("%+v", v.Tasks))
	}
	at := map[string]goals.TaskView{}
	for _, tv := range v.Tasks {
		at[tv.Key] = tv
		if tv.Status != goal.TaskDone || tv.TaskStatus != "done" || tv.Branch != goal.Branch(started.GoalID, tv.Key) {
			t.Errorf("task %+v", tv)
		}
	}
	api, ui, wire := at["api"], at["ui"], at["wire"]
	if !api.StartedAt.Before(ui.EndedAt) || !ui.StartedAt.Before(api.EndedAt) {
		t.Errorf("api ran %v–%v, ui %v–%v: not in parallel", api.StartedAt, api.EndedAt, ui.StartedAt, ui.EndedAt)
	}
	if wire.StartedAt.Before(api.EndedAt) || wire.StartedAt.Before(ui.EndedAt) {
		t.Errorf("wire started %v, before api (%v) or ui (%v) ended", wire.StartedAt, api.EndedAt, ui.EndedAt)
	}
	// The dashboard's Goals page lists the goal's tasks, linked.
	page := c.text("/goals")
	for _, want := range []string{started.GoalID, "wire", `href="/tasks/` + wire.TaskID + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the Goals page lacks %q", want)
		}
	}
	// The goal's chain holds its graph, each task's start and end, and
	// its end.
	var ids []string
	for _, r := range ssotHistory(t, dataDir, goal.WorkflowID(started.GoalID)) {
		ids = append(ids, r.ID)
	}
	want := []string{"-goal", "-api-1-started", "-ui-1-started", "-api-1-done", "-ui-1-done", "-wire-1-started", "-wire-1-done", "-end"}
	for _, w := range want {
		if !slices.Contains(ids, goal.WorkflowID(started.GoalID)+w) {
			t.Errorf("the goal's chain lacks %s: %v", w, ids)
		}
	}
	t.Logf("goal %s done in %s", started.GoalID, v.EndedAt.Sub(v.StartedAt).Round(time.Millisecond))
}
