package delivery

import (
	"context"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

type beats struct{ got []task.HeartbeatInput }

func (b *beats) Heartbeat(_ context.Context, _ string, in task.HeartbeatInput) error {
	b.got = append(b.got, in)
	return nil
}

// TestNoteRetry: a retried attempt of a runner delivery tells the task
// which run it recovers, with the session it resumes; a first attempt
// tells it nothing.
func TestNoteRetry(t *testing.T) {
	b := &beats{}
	a := activities.AgentDelivery{WorkDir: t.TempDir()}
	d := &Delivery{Heartbeats: b}
	m := amp.Message{MsgID: "task_dispatch-T-2026-008-1", TaskID: "T-2026-008", To: amp.RoleExecutor}
	d.noteRetry(context.Background(), a, m, 1)
	if len(b.got) != 0 {
		t.Fatalf("a first attempt sent %+v", b.got)
	}
	d.saveSession(a, m, "S-1")
	d.noteRetry(context.Background(), a, m, 2)
	if len(b.got) != 1 {
		t.Fatalf("sent %d heartbeats, want 1", len(b.got))
	}
	r := b.got[0].Recovering
	if r == nil || r.Role != amp.RoleExecutor || r.MsgID != m.MsgID || r.Session != "S-1" ||
		!strings.HasPrefix(r.Note, "attempt 2 of the executor's run on task_dispatch-T-2026-008-1") || !strings.HasSuffix(r.Note, "resuming session S-1") {
		t.Errorf("recovering %+v", r)
	}
}
