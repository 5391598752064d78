package delivery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// fakeClaudeSlow is a claude that starts its session, then works for 30 s
// before it writes $DONE and reviews.
const fakeClaudeSlow = `#!/bin/sh
echo '{"type":"system","subtype":"init","session_id":"sess-slow"}'
sleep 30
: > "$DONE"
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"sess-slow","result":"{\"verdict\":\"approve\",\"summary\":\"ok\"}"}'
`

// TestRunForEndedTaskStops: a run whose ACK the task refuses because it
// has ended (a retry after the task was cancelled) is stopped at once,
// its CLI gone before it finished, and fails for good: no retry runs
// the agent again for a task nobody waits on.
func TestRunForEndedTaskStops(t *testing.T) {
	dir := t.TempDir()
	repo, head := oneCommitRepo(t, dir)
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte(fakeClaudeSlow), 0o755); err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "done")
	t.Setenv("DONE", done)
	sub := &fakeSubmitter{refuse: task.Errorf(task.CodeFinished, "task T-2026-001 is terminated: it takes no more messages")}
	d := &Delivery{Submit: sub,
		Reviewer: activities.AgentDelivery{Mode: config.AgentModeRunner, Runner: "claude", Command: []string{bin}, WorkDir: filepath.Join(dir, "data"),
			Env: []string{"DONE"}, Timeout: time.Minute, IdleTimeout: time.Minute}}
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleReviewer, "T-2026-001", time.Now(), &amp.ReviewRequest{})
	_, err := d.Deliver(t.Context(), activities.DeliverInput{Message: m, Repo: repo, Commit: head})
	if err == nil || !isNonRetryable(err) || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("delivery for an ended task: %v; want a failure for good naming the task's end", err)
	}
	if _, err := os.Stat(done); err == nil {
		t.Error("the CLI ran to its end for a task that had ended")
	}
	if n := len(sub.got); n != 1 || !strings.Contains(string(sub.got[0]), `"ack_of"`) {
		t.Errorf("submitted %d messages (%s), want the refused ACK alone", n, sub.got)
	}
}
