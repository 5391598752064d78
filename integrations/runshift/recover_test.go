package runshift

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/gate"
)

// fakeTasks is a task store whose tasks have the plans given, and a task
// service whose Submit fails while down is set.
type fakeTasks struct {
	*ssot.DB
	mu          sync.Mutex
	constraints map[string]map[string]any
	down        bool
	submitted   []string
}

func (f *fakeTasks) History(_ context.Context, taskID string, _ ssot.Page) ([]ssot.Record, string, error) {
	c, ok := f.constraints[taskID]
	if !ok {
		return nil, "", nil
	}
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, taskID, testNow, &amp.TaskDispatch{Description: "d", TechConstraints: c})
	raw, err := json.Marshal(m)
	return []ssot.Record{{TaskID: taskID, Kind: "message", Body: raw}}, "", err
}

func (f *fakeTasks) Submit(_ context.Context, raw []byte) (task.SubmitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return task.SubmitResult{}, errors.New("the workflow service is away")
	}
	f.submitted = append(f.submitted, string(raw))
	return task.SubmitResult{}, nil
}

func withTasks(g *testGate, constraints map[string]map[string]any) *fakeTasks {
	f := &fakeTasks{DB: g.store, constraints: constraints}
	g.intake.TaskBudgets = &TaskBudgets{Tasks: f, Store: f}
	return f
}

// TestSignalTaskBound: a task_id is taken only from an agent its plan
// lists in tech_constraints.gate_agents.
func TestSignalTaskBound(t *testing.T) {
	g := newTestGate(t, nil)
	withTasks(g, map[string]map[string]any{
		"T-1": {"gate_agents": []any{"resume-tailor"}},
		"T-2": {"gate_agents": []any{"deployer"}},
		"T-3": {"budget_usd": 1.0},
		"T-4": {"gate_agents": []any{"*"}},
	})
	for task, want := range map[string]int{"T-1": 200, "T-2": 403, "T-3": 403, "T-4": 200, "T-9": 400} {
		p := payload("run-"+task, false)
		p["task_id"] = task
		r := g.do("POST", "/v1/signals", tailorKey, p).want(t, want)
		if want != 200 {
			if f := r.fields(t); len(f) != 1 || f[0] != "task_id" {
				t.Fatalf("%s: fields %v %s", task, f, r.body)
			}
		}
	}
}

// TestRecover: a crash between recording a gated signal and starting its
// gate, or between recording a signal and charging its task, is finished
// by the recovery sweep, once the signal is RecoverAfter old.
func TestRecover(t *testing.T) {
	g := newTestGate(t, nil)
	tasks := withTasks(g, map[string]map[string]any{"T-1": {"gate_agents": []any{"resume-tailor"}, "budget_usd": 0.01}})
	start := g.intake.Start
	g.intake.Start = func(context.Context, gate.Input) (gate.Started, error) {
		return gate.Started{}, errors.New("the workflow service is away")
	}
	tasks.down = true
	p := payload("run-1", true)
	p["task_id"] = "T-1"
	g.do("POST", "/v1/signals", tailorKey, p).want(t, 503)
	g.do("POST", "/v1/signals", tailorKey, payload("run-2", false)).want(t, 200)
	row, ok, err := g.store.GateByRun(context.Background(), "resume-tailor", "run-1")
	if err != nil || !ok || row.Status != "pending" || !row.TaskCharge {
		t.Fatalf("%+v %v %v", row, ok, err)
	}
	g.intake.Start = start
	tasks.down = false
	// Too young: left to its request.
	if rec, err := g.intake.Recover(context.Background()); err != nil || rec != (Recovered{}) {
		t.Fatalf("young: %+v %v", rec, err)
	}
	g.intake.Now = func() time.Time { return testNow.Add(RecoverAfter + time.Second) }
	rec, err := g.intake.Recover(context.Background())
	if err != nil || rec != (Recovered{Started: 1, Charged: 1}) {
		t.Fatalf("recovered %+v %v", rec, err)
	}
	if g.starts[row.GateID] != 1 || len(tasks.submitted) != 1 {
		t.Fatalf("starts %v, escalations %d", g.starts, len(tasks.submitted))
	}
	// The charge is recorded: the next sweep charges nothing again; the
	// pending gate is started again, which changes nothing.
	rec, err = g.intake.Recover(context.Background())
	if err != nil || rec != (Recovered{Started: 1}) || len(tasks.submitted) != 1 {
		t.Fatalf("again %+v %v, escalations %d", rec, err, len(tasks.submitted))
	}
	g.resolve(row.GateID, "approve", "ops")
	if rec, err := g.intake.Recover(context.Background()); err != nil || rec != (Recovered{}) {
		t.Fatalf("resolved %+v %v", rec, err)
	}
}
