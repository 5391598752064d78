package delivery

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
	"go.temporal.io/sdk/activity"
)

// A run's session kept across its deliveries, the check of a runner's
// CLI at start, and the heartbeat that keeps a live worker's attempt.

// sessionPath keeps a role's session of a task, so a redispatch resumes it.
func sessionPath(a activities.AgentDelivery, m amp.Message) string {
	return filepath.Join(a.WorkDir, "sessions", m.TaskID+"."+string(m.To)+"."+a.Runner)
}

func (d *Delivery) loadSession(a activities.AgentDelivery, m amp.Message) string {
	b, err := os.ReadFile(sessionPath(a, m))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (d *Delivery) saveSession(a activities.AgentDelivery, m amp.Message, id string) {
	p := sessionPath(a, m)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
		err = os.WriteFile(p, []byte(id+"\n"), 0o600)
		if err != nil {
			d.log().Warn("keeping a runner session", "task_id", m.TaskID, "error", err)
		}
	}
}

// CheckRunner says whether a runner-mode agent's CLI can start, with its
// version line: "codex 0.171.0"; for an ACP agent, its command line.
func CheckRunner(ctx context.Context, a config.Agent) (string, error) {
	bin := a.Runner
	if len(a.Command) > 0 {
		bin = a.Command[0]
	}
	if a.Runner == config.RunnerACP {
		// An ACP agent's command starts a server on its standard input:
		// only that it is there is checked.
		if _, err := exec.LookPath(bin); err != nil {
			return "", fmt.Errorf("agents: %s: %w", bin, err)
		}
		return "(ACP) " + strings.Join(a.Command, " "), nil
	}
	cmd := exec.CommandContext(ctx, bin, append(append([]string(nil), a.Command[min(1, len(a.Command)):]...), "--version")...)
	cmd.Env = child.Env(nil, a.Env)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("agents: %s --version: %w", bin, err)
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]), nil
}

// AliveEvery is how often a runner delivery heartbeats: well inside the
// Deliver activity's heartbeat timeout (workflows.DeliverHeartbeatTimeout,
// 20 s).
const AliveEvery = 5 * time.Second

// keepAlive heartbeats the activity every AliveEvery until the returned
// function is called.
func keepAlive(ctx context.Context, details any) func() {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(AliveEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx, details)
			}
		}
	}()
	return func() { close(done) }
}
