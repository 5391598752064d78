package goal

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	goalacts "github.com/ampflow/ampflow/activities/goal"
	"github.com/ampflow/ampflow/amp/goal"
)

// Bounds of the planner's work on one goal.
const (
	// DefaultPlannerRounds is Input.PlannerRounds' default: the graphs
	// put to the admins before the goal ends rejected.
	DefaultPlannerRounds = 3
	// MaxPlannerFixes bounds the refused graphs the planner may answer
	// again in one round; one more refused fails the goal.
	MaxPlannerFixes = 2
)

// errPlanner is a planner that gave no graph the goal can take: the goal
// ends failed with its message.
type errPlanner struct{ msg string }

func (e *errPlanner) Error() string { return e.msg }

// planAndApprove has the planner propose the graph and asks the admins to
// approve it; a rejection's note goes back to the planner, which proposes
// again, up to the goal's planner rounds. False: the last graph was
// rejected.
func (r *run) planAndApprove(ctx workflow.Context) (bool, error) {
	rounds := r.in.PlannerRounds
	if rounds <= 0 {
		rounds = DefaultPlannerRounds
	}
	in := goalacts.PlanInput{GoalID: r.Goal.ID, Description: r.Goal.Description, Repo: r.Goal.Repo, Target: r.Target, Head: r.head}
	for round := 1; ; round++ {
		r.Status = goal.StatusPlanning
		g, err := r.propose(ctx, &in, round)
		if err != nil {
			return false, err
		}
		r.takeGraph(g)
		r.Status = goal.StatusAwaitingApproval
		ok, err := r.approve(ctx)
		if err != nil || ok {
			return ok, err
		}
		r.Proposals[len(r.Proposals)-1].Rejected = r.Reason
		if round >= rounds {
			r.Reason += fmt.Sprintf("; the planner had %d of %d rounds (goals.planner_rounds)", round, rounds)
			return false, nil
		}
		in.Feedback = "The admins rejected your graph"
		if n := r.Approval.Note; n != "" {
			in.Feedback += ", with this note: " + n
		} else {
			in.Feedback += ", with no note."
		}
		r.Approval, r.Reason, r.Digest, r.Pending = nil, "", "", nil
	}
}

// propose runs the planner until it answers with a graph that passes the
// checks: a refused one goes back to it with its problems, at most
// MaxPlannerFixes times. Each answer is kept in the goal's proposals
// and its chain.
func (r *run) propose(ctx workflow.Context, in *goalacts.PlanInput, round int) (goal.Goal, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// The planner's own timeout (goals.planner.timeout) bounds its
		// run; the heartbeat, a dead worker.
		StartToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 5 * time.Second, MaximumAttempts: 3,
			NonRetryableErrorTypes: []string{goalacts.ErrNoPlanner, activities.ErrDelivery}},
	})
	for try := 1; ; try++ {
		var out goalacts.PlanResult
		if err := workflow.ExecuteActivity(actx, gacts.GoalPlan, *in).Get(ctx, &out); err != nil {
			return goal.Goal{}, &errPlanner{"the planner: " + errMessage(err)}
		}
		in.Session = out.Session
		p := goal.Proposal{Round: round, Try: try, At: workflow.Now(ctx), Problem: out.Problem}
		if out.Goal != nil {
			for _, t := range out.Goal.Tasks {
				p.Keys = append(p.Keys, t.Key)
			}
		}
		r.Proposals = append(r.Proposals, p)
		r.recordProposal(ctx, p, out)
		if out.Goal != nil && out.Problem == "" {
			in.Feedback = ""
			return *out.Goal, nil
		}
		if try > MaxPlannerFixes {
			return goal.Goal{}, &errPlanner{fmt.Sprintf("the planner's graph was refused %d times, the last: %s", try, oneLine(out.Problem))}
		}
		in.Feedback = "Your graph was refused:\n" + out.Problem
	}
}

// approvePrompt is the plan decision's prompt.
func (r *run) approvePrompt(keys []string) string {
	p := fmt.Sprintf("Approve goal %s: %d tasks (%s) on %s, into %s?", r.Goal.ID, len(keys), strings.Join(keys, ", "), r.Goal.Repo, r.Target)
	if r.Planned {
		p = fmt.Sprintf("Approve the planner's graph for goal %s (round %d): %d tasks (%s) on %s, into %s? A rejection's note goes back to the planner.",
			r.Goal.ID, r.Proposals[len(r.Proposals)-1].Round, len(keys), strings.Join(keys, ", "), r.Goal.Repo, r.Target)
	}
	return p
}

// takeGraph makes the planner's graph the goal's.
func (r *run) takeGraph(g goal.Goal) {
	r.Goal.Tasks, r.Tasks = g.Tasks, nil
	for _, t := range g.Tasks {
		r.Tasks = append(r.Tasks, goal.TaskState{Key: t.Key, Status: goal.TaskWaiting, BlockedBy: t.BlockedBy,
			WaitingOn: slices.Clone(t.BlockedBy), Repo: t.Plan.Repo, Branch: t.Plan.Branch})
	}
}

// recordProposal writes one of the planner's answers in the goal's chain:
// its graph, and why it was refused.
func (r *run) recordProposal(ctx workflow.Context, p goal.Proposal, out goalacts.PlanResult) {
	body := map[string]any{"event": "proposal", "round": p.Round, "try": p.Try, "problem": p.Problem, "cost_usd": out.CostUSD}
	if json.Valid([]byte(out.Graph)) {
		body["graph"] = json.RawMessage(out.Graph)
	} else if out.Graph != "" {
		body["graph_text"] = out.Graph
	}
	b, _ := json.Marshal(body)
	r.queue = append(r.queue, effect{record: &activities.RecordEntry{ID: fmt.Sprintf("%s-proposal-%d-%d", r.id, p.Round, p.Try),
		Kind: kindGoal, Body: b, RecordedAt: p.At}})
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
