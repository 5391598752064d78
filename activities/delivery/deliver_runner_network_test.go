package delivery

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// fakeClaudeDropped is a claude whose model stream drops mid-answer, as
// Node's fetch reports it.
const fakeClaudeDropped = `#!/bin/sh
echo '{"type":"system","subtype":"init","session_id":"sess-net"}'
echo 'TypeError: terminated' >&2
echo '    at Fetch.onAborted (node:internal/deps/undici/undici:10815:53)' >&2
exit 1
`

// TestRunnerConnectionDropRetried: a run whose model API connection
// dropped fails so that the activity's policy runs it again (a retryable
// error of its own type, naming the cause), not as a crash for the
// admins.
func TestRunnerConnectionDropRetried(t *testing.T) {
	dir := t.TempDir()
	repo, head := oneCommitRepo(t, dir)
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte(fakeClaudeDropped), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &Delivery{Submit: &fakeSubmitter{},
		Reviewer: activities.AgentDelivery{Mode: config.AgentModeRunner, Runner: "claude", Command: []string{bin}, WorkDir: filepath.Join(dir, "data"),
			Timeout: time.Minute, IdleTimeout: time.Minute}}
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleReviewer, "T-2026-001", time.Now(), &amp.ReviewRequest{})
	_, err := d.Deliver(t.Context(), activities.DeliverInput{Message: m, Repo: repo, Commit: head})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrModelConnection || app.NonRetryable() {
		t.Fatalf("delivery: %v; want a retryable %s", err, activities.ErrModelConnection)
	}
	if !strings.Contains(app.Message(), "lost its model API's connection") || !strings.Contains(app.Message(), "TypeError: terminated") {
		t.Errorf("message %q does not say the connection dropped", app.Message())
	}
}
