package goal

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities"
	goalacts "github.com/ampflow/ampflow/activities/goal"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
)

// testDecisionKey is the decision key of the tests' worker.
var testDecisionKey = []byte(strings.Repeat("k", decision.MinKeySize))

type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	mu  sync.Mutex
	// started is when each key's task started, in the test's clock.
	started map[string]time.Time
	starts  []string
	// takes is how long each key's task runs; ends how it ends.
	takes map[string]time.Duration
	ends  map[string]task.Status
	files func(branch string) []string
	told  []goalacts.TellTaskInput
	// attempts is each key's last start's Attempt.
	attempts map[string]int
	// unmerged are the keys whose tasks end done without a merge.
	unmerged map[string]bool
	// queues are the merge queues the tasks were started with, by key.
	queues map[string]task.QueueSpec
	// remote is each key's last start's Remote.
	remote map[string]bool
}

// run runs g, each task taking its time on the test clock.
func (h *harness) run(in Input) {
	for _, tk := range in.Goal.Tasks {
		h.await(tk.Key)
	}
	h.env.ExecuteWorkflow(Goal, in)
}

// await has key's task take its time on the test clock and end as
// h.ends says.
func (h *harness) await(key string) {
	d := h.takes[key]
	if d == 0 {
		d = time.Second
	}
	h.env.OnActivity(gacts.AwaitTask, mock.Anything, mock.MatchedBy(func(in goalacts.AwaitTaskInput) bool {
		return strings.HasSuffix(in.TaskID, "|"+key)
	})).After(d).Return(func(_ context.Context, in goalacts.AwaitTaskInput) (task.Result, error) {
		h.mu.Lock()
		end := h.ends[key]
		h.mu.Unlock()
		if end == "" || end == task.StatusDone {
			if h.unmerged[key] {
				return task.Result{TaskID: in.TaskID, Status: task.StatusDone}, nil
			}
			return task.Result{TaskID: in.TaskID, Status: task.StatusDone, Merged: "m-" + key}, nil
		}
		return task.Result{TaskID: in.TaskID, Status: end, Reason: "plan rejected by bob"}, nil
	})
}

func policy(plan task.Handling) task.Policy {
	return task.Policy{
		PlanApproval: task.RiskHandling{Low: plan, Medium: task.HandlingAdmin, High: task.HandlingAdmin},
		Admins:       []string{"alice"},
	}
}

func newHarness(t *testing.T, pol task.Policy) *harness {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	h := &harness{t: t, env: s.NewTestWorkflowEnvironment(), started: map[string]time.Time{},
		takes: map[string]time.Duration{}, ends: map[string]task.Status{}, attempts: map[string]int{},
		unmerged: map[string]bool{}, queues: map[string]task.QueueSpec{}, remote: map[string]bool{}}
	env := h.env
	env.RegisterWorkflow(Goal)
	env.RegisterActivity(&activities.Activities{DecisionKey: testDecisionKey})
	env.RegisterActivity(&goalacts.Goal{})
	env.OnActivity(acts.TaskPolicy, mock.Anything, mock.Anything).Return(activities.PolicyResult{Policy: pol}, nil)
	env.OnActivity(acts.Notify, mock.Anything, mock.Anything).Return(notify.Result{}, nil)
	env.OnActivity(gacts.GoalRecord, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(gacts.GoalDecisions, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(gacts.GoalTellTask, mock.Anything, mock.Anything).Return(func(_ context.Context, in goalacts.TellTaskInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.told = append(h.told, in)
		return nil
	})
	env.OnActivity(gacts.ChangedFiles, mock.Anything, mock.Anything).Return(func(_ context.Context, in goalacts.ChangedFilesInput) (goalacts.ChangedFilesResult, error) {
		out := goalacts.ChangedFilesResult{Files: map[string][]string{}}
		for _, b := range in.Branches {
			if h.files != nil {
				out.Files[b] = h.files(b)
			}
		}
		return out, nil
	})
	env.OnActivity(gacts.GoalTarget, mock.Anything, mock.Anything).Return(goalacts.TargetResult{Target: "main", Head: "abc"}, nil)
	env.OnActivity(gacts.GoalStartTask, mock.Anything, mock.Anything).Return(func(_ context.Context, in goalacts.StartTaskInput) (goalacts.StartTaskResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if in.Target != "main" || in.Input.Plan.Branch != goal.Branch("G-0000abcd", in.Key) {
			t.Errorf("start of %s: target %q branch %q", in.Key, in.Target, in.Input.Plan.Branch)
		}
		id := "T-2026-00" + string(rune('1'+len(h.starts)))
		h.starts = append(h.starts, in.Key)
		h.attempts[in.Key] = in.Attempt
		h.remote[in.Key] = in.Remote
		if q := in.Input.Queue; q != nil {
			h.queues[in.Key] = *q
		}
		h.started[in.Key] = env.Now()
		return goalacts.StartTaskResult{TaskID: id + "|" + in.Key, Base: "abc"}, nil
	})
	return h
}

func diamond() goal.Goal {
	g := goal.Goal{ID: "G-0000abcd", Description: "ship it", Repo: "/src/app"}
	for _, n := range []struct {
		key string
		by  []string
	}{{"schema", nil}, {"api", []string{"schema"}}, {"ui", []string{"schema"}}, {"docs", []string{"api", "ui"}}} {
		g.Tasks = append(g.Tasks, goal.Task{Key: n.key, BlockedBy: n.by, Plan: amp.TaskDispatch{
			Description: n.key, Repo: "/src/app", Branch: goal.Branch(g.ID, n.key), RiskLevel: amp.RiskLow,
			Subtasks: []amp.Subtask{{SubtaskID: "1", Description: n.key, EstimatedLines: 1}}, AcceptanceCriteria: []string{"ok"}}})
	}
	return g
}

func (h *harness) state() goal.State {
	v, err := h.env.QueryWorkflow(goal.QueryState)
	if err != nil {
		h.t.Fatal(err)
	}
	var s goal.State
	if err := v.Get(&s); err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) result() goal.State {
	h.t.Helper()
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("the goal did not end")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatal(err)
	}
	var s goal.State
	if err := h.env.GetWorkflowResult(&s); err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) answer(option string) error { return h.answerWith(option, "") }

// answerWith answers the open decision with option and an admin's note.
func (h *harness) answerWith(option, note string) error {
	st := h.state()
	if st.Pending == nil {
		h.t.Fatalf("no decision open: %+v", st)
	}
	a := decision.Answer{DecisionID: st.Pending.ID, Option: option, Note: note, Digest: st.Pending.Digest, By: "alice", Channel: "cli", At: time.Now()}
	a.Signature = decision.SignAnswer(testDecisionKey, st.Pending.Subject, a)
	var out error
	h.env.UpdateWorkflow(task.UpdateDecide, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {}, OnReject: func(err error) { out = err }, OnComplete: func(_ any, err error) { out = err },
	}, a)
	return out
}
