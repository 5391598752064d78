package goal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	goalacts "github.com/ampflow/ampflow/activities/goal"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
)

// planner plays a goal's planner: its final messages in order, read as
// GoalPlan reads them, and the turns it was given.
type planner struct {
	mu      sync.Mutex
	answers []string
	got     []goalacts.PlanInput
}

// plan mocks GoalPlan with a planner answering answers, each after
// takes on the test clock.
func (h *harness) plan(takes time.Duration, answers ...string) *planner {
	p := &planner{answers: answers}
	h.env.OnActivity(gacts.GoalPlan, mock.Anything, mock.Anything).After(takes).Return(
		func(_ context.Context, in goalacts.PlanInput) (goalacts.PlanResult, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.got = append(p.got, in)
			if len(p.got) > len(p.answers) {
				return goalacts.PlanResult{}, errors.New("the planner has no more answers")
			}
			res := goalacts.ReadGraph(in, p.answers[len(p.got)-1], time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			res.Session = "session-1"
			return res, nil
		})
	return p
}

func (p *planner) turns() []goalacts.PlanInput {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]goalacts.PlanInput(nil), p.got...)
}

// graph is a planner's final message ending with a graph of the keys,
// each blocked by what edges says.
func graph(t *testing.T, edges map[string][]string, keys ...string) string {
	var tasks []any
	for _, k := range keys {
		tasks = append(tasks, map[string]any{"key": k, "blocked_by": edges[k], "plan": map[string]any{
			"description": "do " + k, "risk_level": "low", "acceptance_criteria": []string{k + " works"},
			"subtasks": []any{map[string]any{"subtask_id": "S1", "description": "do " + k, "estimated_lines": 10}}}})
	}
	b, err := json.Marshal(map[string]any{"tasks": tasks})
	if err != nil {
		t.Fatal(err)
	}
	return "I read the code. Here is the graph:\n\n```json\n" + string(b) + "\n```"
}

// draft is a goal given only as a description.
func draft() goal.Goal {
	return goal.Goal{ID: "G-0000abcd", Description: "ship it", Repo: "/src/app", Tasks: []goal.Task{}}
}

// TestPlannerApproved: the goal plans while its planner works; its graph
// is put to the admins even where the policy approves low risk plans by
// itself, and once approved its tasks start in its order.
func TestPlannerApproved(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	p := h.plan(10*time.Minute, graph(t, map[string][]string{"docs": {"api"}}, "api", "docs"))
	h.await("api")
	h.await("docs")
	var planning, asked goal.State
	h.env.RegisterDelayedCallback(func() { planning = h.state() }, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		asked = h.state()
		if err := h.answer(decision.OptApprove); err != nil {
			t.Error(err)
		}
	}, time.Hour)
	h.env.ExecuteWorkflow(Goal, Input{Goal: draft()})
	st := h.result()
	if planning.Status != goal.StatusPlanning || !planning.Planned || len(planning.Tasks) != 0 {
		t.Errorf("while the planner works: %s, planned %v, %d tasks", planning.Status, planning.Planned, len(planning.Tasks))
	}
	if asked.Status != goal.StatusAwaitingApproval || asked.Pending == nil || asked.Pending.Kind != goal.DecisionGoalPlan ||
		!strings.Contains(asked.Pending.Prompt, "planner's graph") {
		t.Fatalf("at the approval: %s, pending %+v", asked.Status, asked.Pending)
	}
	if st.Status != goal.StatusDone || strings.Join(h.starts, " ") != "api docs" {
		t.Fatalf("status %s (%s), starts %v", st.Status, st.Reason, h.starts)
	}
	turns := p.turns()
	if len(turns) != 1 {
		t.Fatalf("%d turns of the planner", len(turns))
	}
	if in := turns[0]; in.Description != "ship it" || in.Target != "main" || in.Head != "abc" || in.Session != "" || in.Feedback != "" {
		t.Errorf("the planner's turn: %+v", in)
	}
	if len(st.Proposals) != 1 || strings.Join(st.Proposals[0].Keys, ",") != "api,docs" || st.Proposals[0].Problem != "" {
		t.Errorf("proposals %+v", st.Proposals)
	}
	if st.Goal.Tasks[1].Plan.Repo != "/src/app" || st.Goal.Tasks[1].Plan.Branch != goal.Branch("G-0000abcd", "docs") {
		t.Errorf("the graph's plans: %+v", st.Goal.Tasks[1].Plan)
	}
}

// TestPlannerCycle: a graph with a cycle is refused, the message naming
// the cycle goes back to the planner in its session, and its fixed graph
// is the one put to the admins. Past MaxPlannerFixes refused graphs the
// goal fails, naming the last problem.
func TestPlannerCycle(t *testing.T) {
	cycle := graph(t, map[string][]string{"a": {"b"}, "b": {"a"}}, "a", "b")
	t.Run("Fixed", func(t *testing.T) {
		h := newHarness(t, policy(task.HandlingAdmin))
		p := h.plan(time.Minute, cycle, graph(t, map[string][]string{"b": {"a"}}, "a", "b"))
		h.await("a")
		h.await("b")
		h.env.RegisterDelayedCallback(func() {
			if err := h.answer(decision.OptApprove); err != nil {
				t.Error(err)
			}
		}, time.Hour)
		h.env.ExecuteWorkflow(Goal, Input{Goal: draft()})
		st := h.result()
		if st.Status != goal.StatusDone || strings.Join(h.starts, " ") != "a b" {
			t.Fatalf("status %s (%s), starts %v", st.Status, st.Reason, h.starts)
		}
		turns := p.turns()
		if len(turns) != 2 || !strings.Contains(turns[1].Feedback, "tasks a → b → a form a cycle") || turns[1].Session != "session-1" {
			t.Fatalf("the planner's turns: %+v", turns)
		}
		if len(st.Proposals) != 2 || !strings.Contains(st.Proposals[0].Problem, "form a cycle") || st.Proposals[1].Problem != "" ||
			st.Proposals[1].Try != 2 || st.Proposals[1].Round != 1 {
			t.Errorf("proposals %+v", st.Proposals)
		}
	})
	t.Run("GivesUp", func(t *testing.T) {
		h := newHarness(t, policy(task.HandlingAdmin))
		p := h.plan(time.Minute, cycle, cycle, cycle, cycle)
		h.env.ExecuteWorkflow(Goal, Input{Goal: draft()})
		st := h.result()
		if st.Status != goal.StatusFailed || !strings.Contains(st.Reason, "refused 3 times") || !strings.Contains(st.Reason, "tasks a → b → a form a cycle") {
			t.Fatalf("status %s (%s)", st.Status, st.Reason)
		}
		if n := len(p.turns()); n != MaxPlannerFixes+1 || len(h.starts) != 0 {
			t.Errorf("%d turns, starts %v", n, h.starts)
		}
	})
}

// TestPlannerRejected: the admins' rejection and its note go back to the
// planner, whose next graph is put to them again; past the goal's planner
// rounds a rejection ends the goal rejected.
func TestPlannerRejected(t *testing.T) {
	first := graph(t, nil, "all")
	second := graph(t, map[string][]string{"ui": {"api"}}, "api", "ui")
	t.Run("Proposes again", func(t *testing.T) {
		h := newHarness(t, policy(task.HandlingAdmin))
		p := h.plan(time.Minute, first, second)
		h.await("api")
		h.await("ui")
		h.env.RegisterDelayedCallback(func() {
			if err := h.answerWith(decision.OptReject, "split the api from the ui"); err != nil {
				t.Error(err)
			}
		}, time.Hour)
		h.env.RegisterDelayedCallback(func() {
			if err := h.answer(decision.OptApprove); err != nil {
				t.Error(err)
			}
		}, 2*time.Hour)
		h.env.ExecuteWorkflow(Goal, Input{Goal: draft()})
		st := h.result()
		if st.Status != goal.StatusDone || strings.Join(h.starts, " ") != "api ui" {
			t.Fatalf("status %s (%s), starts %v", st.Status, st.Reason, h.starts)
		}
		turns := p.turns()
		if len(turns) != 2 || !strings.Contains(turns[1].Feedback, "split the api from the ui") || turns[1].Session != "session-1" {
			t.Fatalf("the planner's turns: %+v", turns)
		}
		if len(st.Proposals) != 2 || !strings.Contains(st.Proposals[0].Rejected, "split the api from the ui") || st.Proposals[1].Round != 2 {
			t.Errorf("proposals %+v", st.Proposals)
		}
		if st.Approval == nil || st.Approval.Option != decision.OptApprove || st.Reason != "" {
			t.Errorf("approval %+v, reason %q", st.Approval, st.Reason)
		}
	})
	t.Run("Rounds", func(t *testing.T) {
		h := newHarness(t, policy(task.HandlingAdmin))
		p := h.plan(time.Minute, first, second)
		h.env.RegisterDelayedCallback(func() {
			if err := h.answerWith(decision.OptReject, "no"); err != nil {
				t.Error(err)
			}
		}, time.Hour)
		h.env.ExecuteWorkflow(Goal, Input{Goal: draft(), PlannerRounds: 1})
		st := h.result()
		if st.Status != goal.StatusRejected || !strings.Contains(st.Reason, "goals.planner_rounds") || len(p.turns()) != 1 {
			t.Fatalf("status %s (%s), %d turns", st.Status, st.Reason, len(p.turns()))
		}
	})
}
