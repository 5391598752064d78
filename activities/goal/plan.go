package goal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/goal"
)

// Planner runs the goals' planner (*delivery.Delivery).
type Planner interface {
	Plan(ctx context.Context, in delivery.PlanRun) (delivery.PlanOutcome, error)
}

// ErrNoPlanner is the failure type of a plan asked of a worker without
// a planner (goals.planner.runner).
const ErrNoPlanner = "GoalNoPlanner"

// PlanInput is one turn of a goal's planner: the goal as given, the
// target's head it reads, and why its last graph was not taken.
type PlanInput struct {
	GoalID      string `json:"goal_id"`
	Description string `json:"description"`
	Repo        string `json:"repo"`
	// Target is the goal's target, resolved; Head its head, which the
	// planner's checkout is at.
	Target string `json:"target"`
	Head   string `json:"head"`
	// Session resumes the planner's session; empty starts a new one,
	// told the whole of the goal again.
	Session string `json:"session,omitempty"`
	// Feedback is why its last graph was not taken: the check's
	// problems, or the admins' rejection and note. Empty on the first
	// turn.
	Feedback string `json:"feedback,omitempty"`
}

// PlanResult is the planner's graph: the goal it makes, or the problem
// that refused it.
type PlanResult struct {
	// Goal is the checked goal, its description, repo and target the
	// goal's own whatever the planner wrote; nil when refused.
	Goal *goal.Goal `json:"goal,omitempty"`
	// Graph is the graph as the planner wrote it (JSON), at most
	// MaxGraph bytes, for the goal's chain.
	Graph string `json:"graph,omitempty"`
	// Problem says why the graph was refused, each field at fault on a
	// line of its own.
	Problem string  `json:"problem,omitempty"`
	Session string  `json:"session,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// MaxGraph bounds the graph kept of one proposal.
const MaxGraph = 64 << 10

// GoalPlan runs the planner on the goal (resuming its session when in
// names one) and checks the graph its final message ends with, as a
// hand-written goal file is checked (goal.Parse).
func (g *Goal) GoalPlan(ctx context.Context, in PlanInput) (PlanResult, error) {
	if g.Planner == nil {
		return PlanResult{}, temporal.NewNonRetryableApplicationError("this worker has no planner (goals.planner.runner)", ErrNoPlanner, nil)
	}
	run := delivery.PlanRun{Subject: goal.WorkflowID(in.GoalID), Repo: in.Repo, Commit: in.Head, SessionID: in.Session,
		System: PlannerSystem(in)}
	run.Prompt = PlannerPrompt(in)
	out, err := g.Planner.Plan(ctx, run)
	if err != nil {
		return PlanResult{}, err
	}
	res := ReadGraph(in, out.Text, g.now())
	res.Session, res.CostUSD = out.SessionID, out.CostUSD
	return res, nil
}

// ReadGraph reads the graph the planner's final message text ends with
// and checks it as the goal's (goal.Parse): the goal's description, repo
// and target, whatever the planner wrote, and the graph's tasks.
func ReadGraph(in PlanInput, text string, now time.Time) PlanResult {
	var res PlanResult
	graph, err := graphOf(text)
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	res.Graph = string(graph)
	if len(res.Graph) > MaxGraph {
		res.Graph = res.Graph[:MaxGraph]
	}
	gl, err := goal.Parse(goalFile(in, graph), in.GoalID, now)
	if err == nil {
		err = ownRooms(gl)
	}
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	res.Goal = &gl
	return res
}

// ownRooms refuses a planner's task aimed elsewhere than the goal's
// repository, or at a branch other than its own: the planner's word
// does not choose where agents work.
func ownRooms(g goal.Goal) error {
	var bad []amp.FieldError
	for i, t := range g.Tasks {
		if t.Plan.Repo != g.Repo {
			bad = append(bad, amp.FieldError{Path: fmt.Sprintf("tasks[%d].plan.repo", i),
				Problem: fmt.Sprintf("is %q: a planner's task works in the goal's repository; leave repo out", t.Plan.Repo)})
		}
		if want := goal.Branch(g.ID, t.Key); t.Plan.Branch != want {
			bad = append(bad, amp.FieldError{Path: fmt.Sprintf("tasks[%d].plan.branch", i),
				Problem: fmt.Sprintf("is %q: a planner's task works on %s; leave branch out", t.Plan.Branch, want)})
		}
	}
	if len(bad) > 0 {
		return &amp.ValidationError{Fields: bad}
	}
	return nil
}

// PlannerSystem is the planner's system prompt: its part, and the graph
// its final message must end with.
func PlannerSystem(in PlanInput) string {
	return fmt.Sprintf("You are the planner of goal %s, run by ampflow. The current directory is a checkout of %s at %s: "+
		"read it, change nothing. Split the goal into tasks for coding agents: each task is done by one agent on a branch of its own, "+
		"and starts once the tasks it is blocked_by are merged into %s; tasks not blocked by each other run in parallel. "+
		"End your final message with the graph as one JSON object, and nothing after it: "+
		`{"tasks": [{"key": "api", "plan": {"description": "...", "risk_level": "low" | "medium" | "high", `+
		`"subtasks": [{"subtask_id": "S1", "description": "...", "estimated_lines": 50}], "acceptance_criteria": ["..."]}, "blocked_by": []}]}. `+
		"Keys are lower-case letters, digits, - and _; blocked_by names other tasks' keys; no cycle; at most %d tasks. "+
		"Leave out each plan's repo and branch: every task works in this repository, on a branch of its own.",
		in.GoalID, in.Target, shortHash(in.Head), in.Target, goal.MaxTasks)
}

// PlannerPrompt is the planner's turn: the goal, when its session is
// new, and why its last graph was not taken.
func PlannerPrompt(in PlanInput) string {
	var b strings.Builder
	if in.Session == "" {
		fmt.Fprintf(&b, "Goal %s, on %s (target branch %s):\n\n%s\n", in.GoalID, in.Repo, in.Target, in.Description)
	}
	if in.Feedback != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(in.Feedback)
		b.WriteString("\n\nAnswer again with the whole graph, as asked: one JSON object at the end of your final message.\n")
	}
	return b.String()
}

// goalFile is the goal file of the planner's graph: the goal's own
// description, repo and target, and the graph's tasks.
func goalFile(in PlanInput, graph json.RawMessage) []byte {
	var g struct {
		Tasks json.RawMessage `json:"tasks"`
	}
	_ = json.Unmarshal(graph, &g)
	b, _ := json.Marshal(map[string]any{"description": in.Description, "repo": in.Repo, "target": in.Target, "tasks": g.Tasks})
	return b
}

// maxGraphText bounds the tail of the planner's final message searched
// for its graph, and maxGraphStarts the "{"s of it tried (a graph of 50
// tasks has a few hundred objects).
const (
	maxGraphText   = 256 << 10
	maxGraphStarts = 2000
)

// graphOf is the last JSON object of the planner's final message that
// has tasks: from each "{" of the message's last maxGraphText bytes,
// last first, up to maxGraphStarts of them, one value is decoded, which
// stops where the object ends or the text stops being JSON.
func graphOf(text string) (json.RawMessage, error) {
	if len(text) > maxGraphText {
		text = text[len(text)-maxGraphText:]
	}
	tries := 0
	for start := strings.LastIndex(text, "{"); start >= 0 && tries < maxGraphStarts; start = strings.LastIndex(text[:start], "{") {
		tries++
		var raw json.RawMessage
		if json.NewDecoder(strings.NewReader(text[start:])).Decode(&raw) != nil {
			continue
		}
		var g struct {
			Tasks json.RawMessage `json:"tasks"`
		}
		if json.Unmarshal(raw, &g) == nil && g.Tasks != nil {
			return raw, nil
		}
	}
	return nil, errors.New(`goal: the final message ends with no JSON object with "tasks"`)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// compile-time check: the delivery is a Planner.
var _ Planner = (*delivery.Delivery)(nil)
