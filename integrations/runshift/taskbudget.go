package runshift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// BudgetKey is where a task's plan carries its budget in USD:
// tech_constraints.budget_usd of its task_dispatch.
const BudgetKey = "budget_usd"

// AgentsKey is where a task's plan names the agents (gate.agents ids, or
// "*" for any) whose signals may name its task_id:
// tech_constraints.gate_agents of its task_dispatch. A task that names
// none takes no agent's signals.
const AgentsKey = "gate_agents"

// Tasks is what task budgets need of the task workflows
// (*workflows.Client): an escalation submitted to a task suspends it.
type Tasks interface {
	Submit(ctx context.Context, raw []byte) (task.SubmitResult, error)
}

// TaskSpend reads a task's plan and spend (*ssot.DB).
type TaskSpend interface {
	History(ctx context.Context, taskID string, p ssot.Page) ([]ssot.Record, string, error)
	TaskSpendThrough(ctx context.Context, g ssot.GateRow) (float64, error)
}

// TaskBudgets charges signals that name a task_id to that task: once the
// spend passes the budget_usd of the task's plan, the task is suspended
// by a critical escalation that an admin resumes or ends.
type TaskBudgets struct {
	Tasks Tasks
	Store TaskSpend
	Now   func() time.Time
	// plans caches each task's plan; a plan does not change its
	// tech_constraints.
	plans sync.Map
}

// taskPlan is what a task's plan says of signals: its budget (nil: none)
// and the agents it takes signals of.
type taskPlan struct {
	budget *float64
	agents []string
}

// Bound refuses a task_id the agent may not name: a task the store does
// not know is invalid, one whose plan does not list the agent in
// tech_constraints.gate_agents is forbidden.
func (tb *TaskBudgets) Bound(ctx context.Context, taskID, agent string) error {
	p, err := tb.plan(ctx, taskID)
	if errors.Is(err, ssot.ErrNotFound) {
		return httpapi.InvalidField("task_id", "no task "+taskID)
	}
	if err != nil {
		return err
	}
	for _, a := range p.agents {
		if a == agent || a == "*" {
			return nil
		}
	}
	return httpapi.FieldError(task.CodeForbidden, "task_id", fmt.Sprintf("task %s does not take agent %s's signals: its plan's tech_constraints.%s does not list it",
		taskID, agent, AgentsKey))
}

// Budget reads a task's budget_usd; ok is false when it has none. A task
// the store does not know is ErrNotFound.
func (tb *TaskBudgets) Budget(ctx context.Context, taskID string) (usd float64, ok bool, err error) {
	p, err := tb.plan(ctx, taskID)
	if err != nil || p.budget == nil {
		return 0, false, err
	}
	return *p.budget, true, nil
}

func (tb *TaskBudgets) plan(ctx context.Context, taskID string) (taskPlan, error) {
	if v, hit := tb.plans.Load(taskID); hit {
		return v.(taskPlan), nil
	}
	recs, _, err := tb.Store.History(ctx, taskID, ssot.Page{Limit: 20})
	if err != nil {
		return taskPlan{}, err
	}
	if len(recs) == 0 {
		return taskPlan{}, fmt.Errorf("task %s: %w", taskID, ssot.ErrNotFound)
	}
	var p taskPlan
	for _, r := range recs {
		var m struct {
			Type    amp.Type `json:"type"`
			Payload struct {
				TechConstraints map[string]any `json:"tech_constraints"`
			} `json:"payload"`
		}
		if r.Kind != "message" || json.Unmarshal(r.Body, &m) != nil || m.Type != amp.TypeTaskDispatch {
			continue
		}
		if v, ok := m.Payload.TechConstraints[BudgetKey].(float64); ok && v > 0 {
			p.budget = &v
		}
		if as, ok := m.Payload.TechConstraints[AgentsKey].([]any); ok {
			for _, a := range as {
				if s, ok := a.(string); ok {
					p.agents = append(p.agents, s)
				}
			}
		}
		// Before its first dispatch a task's plan is not in the SSOT yet:
		// only a plan found is kept.
		tb.plans.Store(taskID, p)
		break
	}
	return p, nil
}

// Charge is told that the signal g was recorded for its task; when g
// took the task's spend past its budget, the task is suspended. Which
// signal crosses the budget is fixed by the order of the records, so a
// charge made late (by Recover) decides as it would have at once.
func (tb *TaskBudgets) Charge(ctx context.Context, g ssot.GateRow) error {
	taskID, cost := g.TaskID, g.CostUSD
	budget, ok, err := tb.Budget(ctx, taskID)
	if err != nil || !ok {
		return err
	}
	spent, err := tb.Store.TaskSpendThrough(ctx, g)
	if err != nil {
		return err
	}
	// Only the signal that crosses the budget escalates; an admin who
	// resumed the task is not asked again by every later signal.
	if spent <= budget || spent-cost > budget {
		return nil
	}
	now := time.Now
	if tb.Now != nil {
		now = tb.Now
	}
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleAdmin, taskID, now().UTC(), &amp.Escalation{
		EscalationType: amp.EscUnknown,
		Severity:       amp.SeverityCritical,
		TriggeredBy:    amp.RoleCoordinator,
		Description: fmt.Sprintf("budget exceeded: the agents' signals for task %s cost $%.4f, over its budget_usd $%.2f",
			taskID, spent, budget),
		AffectedMsgs:        []string{},
		SystemStateSnapshot: map[string]any{"spent_usd": spent, "budget_usd": budget},
		SuggestedActions:    []string{"terminate the task", "resume it, accepting the spend"},
		AutoSuspended:       true,
	})
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := tb.Tasks.Submit(ctx, raw); err != nil {
		var te *task.Error
		if errors.As(err, &te) && (te.Code == task.CodeFinished || te.Code == task.CodeSuspended) {
			return nil // ended or suspended already
		}
		return fmt.Errorf("suspending task %s over its budget: %w", taskID, err)
	}
	return nil
}
