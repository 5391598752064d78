package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// TestGoalPlannerSandboxed: the real Codex CLI as a goal's planner is
// driven by its model to try what a planner escaping its confinement
// would (read the decision key, the Temporal key and the database in
// data_dir; find the worker's environment in /proc; find the model API's
// key; write outside its checkout; move the user's refs; read the open
// API's decisions), and reads what each try gave. Every try fails; the
// goal goes on to the admins with its graph.
func TestGoalPlannerSandboxed(t *testing.T) {
	data, outside := t.TempDir(), t.TempDir()
	const marker = "E2E_PLANNER_WORKER_ONLY_MARKER"
	// Each probe prints name=yes42 or name=no42: the 42 is computed, so
	// the answer is in the tool's output, never in the script the model
	// request carries too.
	probe := func(name, cmd string) string {
		return "if " + cmd + " >/dev/null 2>&1; then echo " + name + "=yes$((6*7)); else echo " + name + "=no$((6*7)); fi; "
	}
	repo := gitRepo(t)
	git(t, repo, "checkout", "-q", "--detach", "main")
	api := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	model := fakemodel.New(fakemodel.Turn{Text: "Probing.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "{ " +
		probe("decision_key", "cat "+filepath.Join(data, "decision.key")) +
		probe("temporal_key", "cat "+filepath.Join(data, "temporal.key")) +
		probe("database", "cat "+filepath.Join(data, "ampflow.db")) +
		probe("worker_env", "grep -qs "+marker+" /proc/*/environ") +
		probe("model_key", "grep -rqs \"$(printf %s%s "+runnerKey[:5]+" "+runnerKey[5:]+")\" /proc/*/environ \"$HOME\" \"$CODEX_HOME\" /tmp") +
		probe("write_outside", "touch "+filepath.Join(outside, "escaped")) +
		probe("write_checkout", "touch ./inside") +
		probe("user_ref", "git --git-dir="+filepath.Join(repo, ".git")+" update-ref refs/heads/hijack HEAD") +
		probe("api_token", `env | grep -q '^AMPFLOW_'`) +
		// dev's API is open: the planner has no credential for it, and
		// reaches none of it, through the proxy or at its own address.
		probe("open_api", "curl -sf --max-time 10 http://"+api+"/v1/decisions") +
		probe("open_api_direct", "curl -sf --max-time 10 --noproxy '*' http://"+api+"/v1/decisions") +
		"} 2>&1"}}},
		plannerGraph(t, nil, "all"))
	t.Cleanup(model.Close)
	env := append(agentCLIEnv(t, "AMPFLOW_GOALS_PLANNER_", "codex", model), marker+"=1")
	// startDev, with the API's address known to the probes beforehand.
	p := &devProc{t: t, dataDir: data, env: env, temporal: fmt.Sprintf("127.0.0.1:%d", freePort(t)), api: api}
	p.start()
	t.Cleanup(p.stop)
	if out := p.output(); !strings.Contains(out, "planner    runner codex") || !strings.Contains(out, "sandboxed") || strings.Contains(out, "NOT sandboxed") {
		t.Errorf("dev did not say the planner runs sandboxed:\n%s", out)
	}
	c := newAPIClient(t, p.api, "")
	var started goals.StartResponse
	if code, resp := c.call("POST", "/v1/goals", map[string]any{"description": "probe", "repo": repo}, &started); code != http.StatusCreated {
		t.Fatalf("POST /v1/goals: %d %s", code, resp)
	}
	g := &goalPlayer{t: t, c: c, repo: repo, id: started.GoalID, handled: map[string]bool{}, rounds: map[string]int{}}
	v := g.until("the planner's graph for the admins", 4*time.Minute, func(v goals.View) bool { return v.Status.Terminal() || v.Pending != nil })
	if v.Status != goal.StatusAwaitingApproval {
		t.Fatalf("goal %s: %s (%s)\n%s", g.id, v.Status, v.Reason, p.output())
	}
	reqs := model.AgentRequests()
	probes := reqs[len(reqs)-1]
	want := map[string]string{"decision_key": "no", "temporal_key": "no", "database": "no", "worker_env": "no", "model_key": "no",
		"write_outside": "no", "write_checkout": "yes", "user_ref": "no", "api_token": "no", "open_api": "no", "open_api_direct": "no"}
	for k, v := range want {
		if !probes.Text(k + "=" + v + "42") {
			t.Errorf("%s is not %s:\n%.4000s", k, v, probes.Body)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("the planner wrote outside its checkout")
	}
}
