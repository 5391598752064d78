package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/goals"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// goalPlan is a one-subtask plan that writes key.txt.
func goalPlan(key string) map[string]any {
	return map[string]any{"description": "write " + key, "risk_level": "low",
		"subtasks":            []any{map[string]any{"subtask_id": "S1", "description": "write " + key + ".txt", "estimated_lines": 1}},
		"acceptance_criteria": []any{key + ".txt exists"}}
}

// goalPlayer plays a goal's agents over the API: the executor commits
// key.txt (or what file says) in a worktree of the task's branch, which
// it removes after, and rebases the branch onto main when the merge
// queue sends it back; the reviewer approves.
type goalPlayer struct {
	t       *testing.T
	c       *apiClient
	repo    string
	id      string
	handled map[string]bool
	// file names the file a task's executor writes; nil is key.txt.
	file func(key string) string
	// rounds are the dispatches of the queue's rounds, by key.
	rounds map[string]int
	// pace, when set, is how long an executor takes: its result is sent
	// that long after its dispatch came, the other agents played
	// meanwhile. due are the results not sent yet.
	pace time.Duration
	due  []dueReply
	// origin, when set, is the bare repository the target lives in: a
	// round fetches its main into origin/main and rebases onto that.
	origin string
}

// dueReply is a result the goalPlayer sends at a time.
type dueReply struct {
	at    time.Time
	reply amp.Message
}

// show reads the goal.
func (g *goalPlayer) show() goals.View {
	var v goals.View
	if code := g.c.do("GET", "/v1/goals/"+g.id, nil, &v); code != http.StatusOK {
		g.t.Fatalf("GET /v1/goals/%s: %d", g.id, code)
	}
	return v
}

// until answers the agents' inboxes until cond holds of the goal, for up
// to within.
func (g *goalPlayer) until(what string, within time.Duration, cond func(goals.View) bool) goals.View {
	t, c := g.t, g.c
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		v := g.show()
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("goal %s: no %s after %s: %s (%s) %+v", g.id, what, within, v.Status, v.Reason, v.Tasks)
		}
		g.due = slices.DeleteFunc(g.due, func(d dueReply) bool {
			if time.Now().Before(d.at) {
				return false
			}
			c.submit("/v1/messages", mustJSON(t, d.reply))
			return true
		})
		for _, role := range []amp.Role{amp.RoleExecutor, amp.RoleReviewer} {
			var inbox struct {
				Messages []amp.Message `json:"messages"`
			}
			if code := c.do("GET", "/v1/inbox?role="+string(role)+"&wait=1s", nil, &inbox); code != http.StatusOK {
				t.Fatalf("inbox answered %d", code)
			}
			for _, m := range inbox.Messages {
				if g.handled[m.MsgID] {
					continue
				}
				g.handled[m.MsgID] = true
				if code, resp := c.call("POST", "/v1/acks", httpapi.AckRequest{MsgID: m.MsgID, As: m.To}, nil); code != http.StatusAccepted {
					t.Fatalf("ACK of %s: %d %s", m.MsgID, code, resp)
				}
				a := &agent{t: t}
				var reply amp.Message
				switch m.Type {
				case amp.TypeTaskDispatch:
					branch := m.Dispatch().Branch
					a.repo = filepath.Join(t.TempDir(), "wt")
					addWorktree(t, g.repo, a.repo, branch)
					key := branch[strings.LastIndex(branch, "/")+1:]
					file := key + ".txt"
					if g.file != nil {
						file = g.file(key)
					}
					if strings.Contains(m.Dispatch().Description, "merge queue") {
						g.rounds[key]++
						onto := "main"
						if g.origin != "" {
							git(t, g.repo, "fetch", "-q", g.origin, "+refs/heads/main:refs/remotes/origin/main")
							onto = "origin/main"
						}
						reply = a.rebase(m, file, onto)
					} else {
						reply = a.work(m, file, key+"\n")
					}
					git(t, g.repo, "worktree", "remove", "--force", a.repo)
					if g.pace > 0 {
						g.due = append(g.due, dueReply{at: time.Now().Add(g.pace), reply: reply})
						continue
					}
				case amp.TypeReviewRequest:
					reply = a.verdict(m, amp.DecisionApproved)
				default:
					continue
				}
				c.submit("/v1/messages", mustJSON(t, reply))
			}
		}
	}
}

func startGoal(t *testing.T, c *apiClient, repo string, tasks ...any) *goalPlayer {
	t.Helper()
	var started goals.StartResponse
	file := map[string]any{"description": "write files", "repo": repo, "tasks": tasks}
	if code, resp := c.call("POST", "/v1/goals", file, &started); code != http.StatusCreated {
		t.Fatalf("POST /v1/goals: %d %s", code, resp)
	}
	return &goalPlayer{t: t, c: c, repo: repo, id: started.GoalID, handled: map[string]bool{}, rounds: map[string]int{}}
}

// TestGoalJoin runs a goal of three tasks on a real `ampflow dev`: api and
// ui in parallel, then wire once both are done. The test plays the
// executor (each task in a worktree of its own branch) and the reviewer
// over the API; the goal ends done, wire's branch made after both ended.
func TestGoalJoin(t *testing.T) {
	repo := gitRepo(t)
	// The merge queue moves main: no checkout may have it.
	git(t, repo, "checkout", "-q", "--detach", "main")
	dataDir := t.TempDir()
	p := startDev(t, dataDir)
	c := newAPIClient(t, p.api, "")
	g := startGoal(t, c, repo,
		map[string]any{"key": "api", "plan": goalPlan("api")},
		map[string]any{"key": "ui", "plan": goalPlan("ui")},
		map[string]any{"key": "wire", "plan": goalPlan("wire"), "blocked_by": []string{"api", "ui"}})
	v := g.until("end", 90*time.Second, func(v goals.View) bool { return v.Status.Terminal() })
	if v.Status != goal.StatusDone {
		t.Fatalf("goal %s is %s (%s): %+v", g.id, v.Status, v.Reason, v.Tasks)
	}
	at := map[string]goals.TaskView{}
	for _, tv := range v.Tasks {
		at[tv.Key] = tv
		if tv.Status != goal.TaskDone || tv.TaskStatus != task.StatusDone || tv.Branch != goal.Branch(g.id, tv.Key) {
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
	// The dashboard's Goals page lists the goal's tasks, linked, with
	// their place in the merge queue.
	if len(wire.Merged) < 12 {
		t.Fatalf("wire is done unmerged: %+v", wire)
	}
	page := c.text("/goals")
	for _, want := range []string{g.id, "wire", `href="/tasks/` + wire.TaskID + `"`, `<th scope="col">Queue</th>`, "merged " + wire.Merged[:12]} {
		if !strings.Contains(page, want) {
			t.Errorf("the Goals page lacks %q", want)
		}
	}
	// The goal's chain holds its graph, each task's start and end, and
	// its end.
	var ids []string
	for _, r := range ssotHistory(t, dataDir, goal.WorkflowID(g.id)) {
		ids = append(ids, r.ID)
	}
	for _, w := range []string{"-goal", "-api-1-started", "-ui-1-started", "-api-1-done", "-ui-1-done", "-wire-1-started", "-wire-1-done", "-end"} {
		if !slices.Contains(ids, goal.WorkflowID(g.id)+w) {
			t.Errorf("the goal's chain lacks %s: %v", w, ids)
		}
	}
	t.Logf("goal %s done in %s", g.id, v.EndedAt.Sub(v.StartedAt).Round(time.Millisecond))
}

// TestGoalBlockedRetry: under a policy that asks an admin for every plan,
// the goal's graph is one decision; api's own plan is then rejected, so
// api ends terminated, wire is held and the goal blocked on a
// goal_blocked decision; retry starts api again as a new task, and the
// goal ends done.
func TestGoalBlockedRetry(t *testing.T) {
	repo := gitRepo(t)
	git(t, repo, "checkout", "-q", "--detach", "main")
	p := startDev(t, t.TempDir(), "AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin")
	c := newAPIClient(t, p.api, "")
	g := startGoal(t, c, repo,
		map[string]any{"key": "api", "plan": goalPlan("api")},
		map[string]any{"key": "wire", "plan": goalPlan("wire"), "blocked_by": []string{"api"}})
	pendingOf := func(kind decision.Kind) func(goals.View) bool {
		return func(v goals.View) bool { return v.Pending != nil && v.Pending.Kind == kind }
	}
	v := g.until("goal_plan decision", 60*time.Second, pendingOf(goal.DecisionGoalPlan))
	if v.Pending.Digest != v.Digest || v.Tasks[0].TaskID != "" {
		t.Fatalf("before approval: %+v", v)
	}
	c.decide(*v.Pending, decision.OptApprove)
	v = g.until("api's task", 60*time.Second, func(v goals.View) bool { return v.Tasks[0].TaskID != "" })
	first := v.Tasks[0].TaskID
	d := c.pending(first, task.KindPlanApproval, 60*time.Second)
	if code, resp := c.call("POST", "/v1/decisions/"+d.ID, httpapi.DecideRequest{Option: decision.OptReject, Note: "not yet", Digest: d.Digest}, nil); code != http.StatusOK {
		t.Fatalf("rejecting %s: %d %s", d.ID, code, resp)
	}
	v = g.until("goal_blocked decision", 60*time.Second, pendingOf(goal.DecisionBlocked))
	if v.Status != goal.StatusBlocked || v.Tasks[0].Status != goal.TaskTerminated || v.Tasks[1].Status != goal.TaskHeld ||
		!strings.Contains(v.Reason, "task api ("+first+") ended terminated") {
		t.Fatalf("blocked: %s %q %+v", v.Status, v.Reason, v.Tasks)
	}
	c.decide(*v.Pending, goal.OptRetry)
	approved := map[string]bool{}
	v = g.until("end", 120*time.Second, func(v goals.View) bool {
		for _, tv := range v.Tasks {
			if tv.TaskID != "" && tv.TaskID != first && !approved[tv.TaskID] && tv.TaskStatus == task.StatusAwaitingApproval {
				if st := c.state(tv.TaskID); st.Pending != nil && st.Pending.Kind == task.KindPlanApproval {
					c.decide(*st.Pending, decision.OptApprove)
					approved[tv.TaskID] = true
				}
			}
		}
		return v.Status.Terminal()
	})
	if v.Status != goal.StatusDone || v.Tasks[0].TaskID == first {
		t.Fatalf("goal %s: %s (%s) %+v", g.id, v.Status, v.Reason, v.Tasks)
	}
}

// addWorktree adds a worktree of repo at dir on branch. ampflow prunes
// the repository's worktrees as it works (git worktree prune), which can
// take an add's half-made entry from under it; such an add is made again.
func addWorktree(t *testing.T, repo, dir, branch string) {
	t.Helper()
	var out []byte
	var err error
	for range 5 {
		cmd := exec.Command("git", "-C", repo, "worktree", "add", "-q", dir, branch)
		if out, err = cmd.CombinedOutput(); err == nil {
			return
		}
		_ = os.RemoveAll(dir)
		_ = exec.Command("git", "-C", repo, "worktree", "prune").Run()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("git worktree add %s %s: %v\n%s", dir, branch, err, out)
}
