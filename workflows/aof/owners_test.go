package aof

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// TestAuthorize: an agent updates, hands off and answers handoffs only
// of what is its own; the acceptance criteria never come from the agent
// under review.
func TestAuthorize(t *testing.T) {
	ready := Task{TaskID: testTask, Assignee: "swe-backend", Status: StatusReady}
	running := Task{TaskID: testTask, Assignee: "swe-backend", Status: StatusInProgress, Run: &RunInfo{AgentID: "swe-frontend", Status: RunRunning}}
	handed := Task{TaskID: testTask, Status: StatusReady, Handoff: &HandoffRequest{ToAgent: "swe-qa"}}
	status := func(from string) Message {
		m := msg(TypeStatusUpdate, t0)
		m.FromAgent = from
		m.Status = &StatusUpdate{TaskID: testTask, AgentID: from, Progress: "p"}
		return m
	}
	handoff := func(from, to string) Message {
		m := handoffMsg()
		m.FromAgent, m.Handoff.FromAgent, m.Handoff.ToAgent = from, from, to
		return m
	}
	reply := func(typ, from string) Message {
		m := msg(typ, t0)
		m.FromAgent = from
		m.Reply = &HandoffReply{TaskID: testTask}
		return m
	}
	parent := []string{"planner-agent"}
	for _, c := range []struct {
		name string
		t    Task
		in   MessageInput
		ok   bool
	}{
		{"StatusByAssignee", ready, MessageInput{Message: status("swe-backend"), Agent: "swe-backend"}, true},
		{"StatusByRunner", running, MessageInput{Message: status("swe-frontend"), Agent: "swe-frontend"}, true},
		{"StatusByStranger", running, MessageInput{Message: status("intruder"), Agent: "intruder"}, false},
		{"StatusByCoordinator", running, MessageInput{Message: status("intruder")}, true},
		{"HandoffByParentOwner", Task{TaskID: testTask, Status: StatusReady}, MessageInput{Message: handoff("planner-agent", "swe-qa"), Agent: "planner-agent", ParentOwners: parent}, true},
		{"HandoffByStranger", Task{TaskID: testTask, Status: StatusReady}, MessageInput{Message: handoff("intruder", "swe-qa"), Agent: "intruder", ParentOwners: parent}, false},
		{"HandoffByAgentUnderReview", ready, MessageInput{Message: handoff("swe-backend", "swe-qa"), Agent: "swe-backend", ParentOwners: []string{"swe-backend"}}, false},
		{"HandoffToItself", Task{TaskID: testTask, Status: StatusReady}, MessageInput{Message: handoff("planner-agent", "planner-agent"), Agent: "planner-agent", ParentOwners: parent}, false},
		{"HandoffByCoordinator", ready, MessageInput{Message: handoff("swe-backend", "swe-qa")}, true},
		{"AcceptedByHandedTo", handed, MessageInput{Message: reply(TypeHandoffAccepted, "swe-qa"), Agent: "swe-qa"}, true},
		{"RejectedByStranger", handed, MessageInput{Message: reply(TypeHandoffRejected, "intruder"), Agent: "intruder"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Authorize(c.t, c.in)
			if c.ok != (err == nil) {
				t.Fatalf("Authorize = %v, want ok %v", err, c.ok)
			}
			if err != nil {
				var app *temporal.ApplicationError
				if !errors.As(err, &app) {
					t.Fatalf("refusal %v is not an application error", err)
				}
				if e, ok := refusal.Of(app); !ok || e.Code != task.CodeForbidden {
					t.Errorf("refused %v, want %s", err, task.CodeForbidden)
				}
			}
		})
	}
}

// TestStatusUpdateByStranger: the workflow refuses another agent's status
// update and changes nothing.
func TestStatusUpdateByStranger(t *testing.T) {
	h := newHarness(t)
	var r *reply
	h.at(time.Second, func() {
		m := msg(TypeStatusUpdate, t0)
		m.FromAgent = "intruder"
		m.Status = &StatusUpdate{TaskID: testTask, AgentID: "intruder", Status: StatusBlocked, Blockers: []string{"x"}}
		r = h.update(UpdateMessage, MessageInput{Message: m, Agent: "intruder"})
	})
	h.at(time.Minute, func() {
		r.refused(t, task.CodeForbidden)
		if tk := h.task(); tk.Status != StatusReady || len(tk.WorkLog) != 0 {
			t.Errorf("a refused update changed the task: %+v", tk)
		}
	})
	h.run()
}
