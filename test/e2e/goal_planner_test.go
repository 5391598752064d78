package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/integrations/goals"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// plannerGraph is a planner's final message: a graph of the keys, each
// blocked by what edges says, each task writing key.txt.
func plannerGraph(t *testing.T, edges map[string][]string, keys ...string) fakemodel.Turn {
	var tasks []any
	for _, k := range keys {
		tasks = append(tasks, map[string]any{"key": k, "plan": goalPlan(k), "blocked_by": edges[k]})
	}
	return fakemodel.Turn{Text: "I read the repository. The graph:\n" + string(mustJSON(t, map[string]any{"tasks": tasks}))}
}

// TestGoalPlanner: a goal given as a description alone is handed to the
// planner, Claude Code or Codex against a fake model. Its first graph has a
// cycle: it is refused, and the message naming the cycle reaches the
// planner in its session; its fixed graph goes to the admins, who reject
// it with a note, which reaches the planner too; its third graph is
// approved and its tasks run, in its order, to merged.
func TestGoalPlanner(t *testing.T) {
	for _, cli := range []string{"claude", "codex"} {
		t.Run(cli, func(t *testing.T) { testGoalPlanner(t, cli) })
	}
}

func testGoalPlanner(t *testing.T, cli string) {
	model := fakemodel.New(
		plannerGraph(t, map[string][]string{"api": {"ui"}, "ui": {"api"}}, "api", "ui"),
		plannerGraph(t, nil, "all"),
		plannerGraph(t, map[string][]string{"ui": {"api"}}, "api", "ui"),
	)
	t.Cleanup(model.Close)
	repo := gitRepo(t)
	git(t, repo, "checkout", "-q", "--detach", "main")
	p := startDev(t, t.TempDir(), agentCLIEnv(t, "AMPFLOW_GOALS_PLANNER_", cli, model)...)
	c := newAPIClient(t, p.api, "")
	var started goals.StartResponse
	if code, resp := c.call("POST", "/v1/goals", map[string]any{"description": "write the api and then the ui", "repo": repo}, &started); code != http.StatusCreated ||
		started.Status != goal.StatusPlanning {
		t.Fatalf("POST /v1/goals: %d %s", code, resp)
	}
	g := &goalPlayer{t: t, c: c, repo: repo, id: started.GoalID, handled: map[string]bool{}, rounds: map[string]int{}}
	asked := func(round int) func(goals.View) bool {
		return func(v goals.View) bool {
			return v.Status.Terminal() || v.Pending != nil && v.Pending.Kind == goal.DecisionGoalPlan && v.Proposals[len(v.Proposals)-1].Round == round
		}
	}
	v := g.until("the planner's first graph for the admins", 4*time.Minute, asked(1))
	if v.Status != goal.StatusAwaitingApproval || len(v.Proposals) != 2 {
		t.Fatalf("goal %s: %s (%s), proposals %+v\n%s", g.id, v.Status, v.Reason, v.Proposals, p.output())
	}
	if !strings.Contains(v.Proposals[0].Problem, "tasks api → ui → api form a cycle") || strings.Join(v.Proposals[1].Keys, ",") != "all" {
		t.Errorf("proposals %+v", v.Proposals)
	}
	reqs := model.AgentRequests()
	fix := reqs[len(reqs)-1]
	if !fix.Text("tasks api → ui → api form a cycle") || !fix.Text("write the api and then the ui") {
		t.Errorf("the planner's second turn lacks the cycle or its session's history:\n%.3000s", fix.Body)
	}
	d := *v.Pending
	body := httpapi.DecideRequest{Option: decision.OptReject, Note: "split the api from the ui", Digest: d.Digest}
	if code, resp := c.call("POST", "/v1/decisions/"+d.ID, body, nil); code != http.StatusOK {
		t.Fatalf("rejecting %s: %d %s", d.ID, code, resp)
	}
	v = g.until("the planner's second graph for the admins", 4*time.Minute, asked(2))
	if v.Status != goal.StatusAwaitingApproval || !strings.Contains(v.Proposals[1].Rejected, "split the api from the ui") {
		t.Fatalf("goal %s: %s (%s), proposals %+v", g.id, v.Status, v.Reason, v.Proposals)
	}
	reqs = model.AgentRequests()
	if last := reqs[len(reqs)-1]; !last.Text("split the api from the ui") {
		t.Errorf("the planner's third turn lacks the admins' note:\n%.3000s", last.Body)
	}
	c.decide(*v.Pending, decision.OptApprove)
	v = g.until("end", 2*time.Minute, func(v goals.View) bool { return v.Status.Terminal() })
	if v.Status != goal.StatusDone || len(v.Tasks) != 2 || !v.Planned {
		t.Fatalf("goal %s is %s (%s): %+v", g.id, v.Status, v.Reason, v.Tasks)
	}
	if api, ui := v.Tasks[0], v.Tasks[1]; api.Key != "api" || ui.StartedAt.Before(api.EndedAt) || api.Merged == "" || ui.Merged == "" {
		t.Errorf("tasks %+v", v.Tasks)
	}
	// The chain holds each of the planner's answers with its graph.
	var graphs int
	for _, r := range ssotHistory(t, p.dataDir, goal.WorkflowID(g.id)) {
		if strings.Contains(r.ID, "-proposal-") {
			var body struct {
				Graph json.RawMessage `json:"graph"`
			}
			if json.Unmarshal(r.Body, &body) == nil && len(body.Graph) > 0 {
				graphs++
			}
		}
	}
	if graphs != 3 {
		t.Errorf("the goal's chain holds %d of the planner's graphs, want 3", graphs)
	}
}
