package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// signals is a Temporal client that keeps the signals it is sent.
type signals struct {
	client.Client
	sent []task.HeartbeatInput
}

func (s *signals) SignalWorkflow(_ context.Context, _, _, _ string, arg any) error {
	s.sent = append(s.sent, arg.(task.HeartbeatInput))
	return nil
}

// TestHeartbeatThrottled: a flood of heartbeats on one task reaches its
// workflow as one signal a HeartbeatEvery per role, with one note a
// NoteEvery; a recovered heartbeat and another task's pass.
func TestHeartbeatThrottled(t *testing.T) {
	now := time.Date(2026, 2, 26, 14, 0, 0, 0, time.UTC)
	tc := &signals{}
	c := &Client{Temporal: tc, DecisionKey: testDecisionKey, Now: func() time.Time { return now }}
	beat := func(taskID string, in task.HeartbeatInput) {
		t.Helper()
		if err := c.Heartbeat(t.Context(), taskID, in); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		beat(testTaskID, task.HeartbeatInput{From: amp.RoleExecutor, Note: "working"})
	}
	if len(tc.sent) != 1 || tc.sent[0].Note != "working" {
		t.Fatalf("100 heartbeats at once sent %+v, want one with its note", tc.sent)
	}
	beat(testTaskID, task.HeartbeatInput{From: amp.RoleReviewer})
	beat(testTaskID, task.HeartbeatInput{From: amp.RoleExecutor, Recovered: true})
	beat("T-2026-999", task.HeartbeatInput{From: amp.RoleExecutor, Note: "other"})
	if len(tc.sent) != 4 {
		t.Fatalf("sent %d, want the reviewer's, the recovered one and the other task's too", len(tc.sent))
	}
	if a, err := tc.sent[2].SignedAs(); err != nil || decision.VerifyAnswer(testDecisionKey, testTaskID, a, time.Now()) != nil {
		t.Errorf("the recovered heartbeat %+v is not signed with the decision key (%v)", tc.sent[2], err)
	}
	now = now.Add(HeartbeatEvery)
	beat(testTaskID, task.HeartbeatInput{From: amp.RoleExecutor, Note: "still working"})
	if got := tc.sent[len(tc.sent)-1]; len(tc.sent) != 5 || got.Note != "" {
		t.Errorf("a heartbeat due within the note window sent %+v, want it without its note", got)
	}
	now = now.Add(NoteEvery)
	beat(testTaskID, task.HeartbeatInput{From: amp.RoleExecutor, Note: "done soon"})
	if got := tc.sent[len(tc.sent)-1]; len(tc.sent) != 6 || got.Note != "done soon" {
		t.Errorf("a heartbeat past both windows sent %+v, want it with its note", got)
	}
}

// TestHeartbeatAfterRecovering: a recovering heartbeat is sent whatever
// came before it, and the first heartbeat of the role it recovers after
// it is sent too, even within HeartbeatEvery of the role's last one, so
// the task stops reporting recovering as soon as the retried run starts.
func TestHeartbeatAfterRecovering(t *testing.T) {
	now := time.Date(2026, 2, 26, 14, 0, 0, 0, time.UTC)
	tc := &signals{}
	c := &Client{Temporal: tc, DecisionKey: testDecisionKey, Now: func() time.Time { return now }}
	for _, in := range []task.HeartbeatInput{
		{From: amp.RoleExecutor, Note: "working"},
		{Note: "the worker died", Recovering: &task.Recovery{Role: amp.RoleExecutor, MsgID: "task_dispatch-1"}},
		{Note: "the worker died", Recovering: &task.Recovery{Role: amp.RoleExecutor, MsgID: "task_dispatch-1"}},
		{From: amp.RoleExecutor, Note: "session"},
		{From: amp.RoleExecutor, Note: "tool call"},
	} {
		if err := c.Heartbeat(t.Context(), testTaskID, in); err != nil {
			t.Fatal(err)
		}
	}
	if len(tc.sent) != 4 || tc.sent[1].Recovering == nil || tc.sent[2].Recovering == nil || tc.sent[3].From != amp.RoleExecutor {
		t.Fatalf("sent %+v, want the first beat, both recovering ones and the retried run's first", tc.sent)
	}
	if a, err := tc.sent[1].SignedAs(); err != nil || decision.VerifyAnswer(testDecisionKey, testTaskID, a, time.Now()) != nil {
		t.Errorf("the recovering heartbeat is not signed with the decision key (%v)", err)
	}
}

// TestAccountNoteSent: a note on a run's account is sent with its note
// within both windows, and leaves them as they were.
func TestAccountNoteSent(t *testing.T) {
	now := time.Date(2026, 2, 26, 14, 0, 0, 0, time.UTC)
	tc := &signals{}
	c := &Client{Temporal: tc, DecisionKey: testDecisionKey, Now: func() time.Time { return now }}
	for _, in := range []task.HeartbeatInput{
		{From: amp.RoleExecutor, Note: "working"},
		{From: amp.RoleExecutor, Note: "account a of the executor rests until 14:05 UTC (usage limit)", Account: true},
		{From: amp.RoleExecutor, Note: "still working"},
	} {
		if err := c.Heartbeat(t.Context(), testTaskID, in); err != nil {
			t.Fatal(err)
		}
	}
	if len(tc.sent) != 2 || !tc.sent[1].Account || !strings.HasPrefix(tc.sent[1].Note, "account a") {
		t.Errorf("sent %+v, want the first heartbeat and the account's note", tc.sent)
	}
}
