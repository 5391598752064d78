package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

// A fleet of runner hosts: each worker that runs agent CLIs is a host
// (runner.host) and polls, beside the shared task queue, a queue of its
// own (HostQueue). A task's runs go to the host that holds its worktrees
// and sessions; when that host is gone they move to another (re-homing).

// HostQueue is the task queue of host's runs, beside queue.
func HostQueue(queue, host string) string { return queue + "@" + host }

// NeedsActivityDetail is the detail of an ErrNeedsActivity refusal: the
// agent's mode, and for a runner the host of the worker that refused it,
// whose queue (HostQueue) may take the task's runs.
type NeedsActivityDetail struct {
	Mode string `json:"mode"`
	Host string `json:"host,omitempty"`
}

// Rehome marks a run on a host that did not hold the task before: the
// host its runs left, and when that one was last seen. The run makes a
// fresh checkout of the task's branch and starts a new session, primed
// with a summary of the role's transcript so far.
type Rehome struct {
	From   string    `json:"from"`
	SeenAt time.Time `json:"seen_at,omitzero"`
}

// HostReader reads the fleet's hosts (the SSOT's fleet_hosts).
type HostReader interface {
	Hosts(ctx context.Context, since time.Time) ([]ssot.Host, error)
}

// RunnerHostInput asks where a task whose host is gone goes next.
type RunnerHostInput struct {
	TaskID string `json:"task_id"`
	// Gone is the host that did not take the task's run in time.
	Gone string `json:"gone"`
}

// RunnerHostResult names this worker's runner host (empty when it runs
// no agent CLIs) and when the gone host was last seen in the fleet
// (zero when it never was).
type RunnerHostResult struct {
	Host       string    `json:"host,omitempty"`
	GoneSeenAt time.Time `json:"gone_seen_at,omitzero"`
}

// RunnerHost answers where a task re-homes: to this worker's host, with
// when the host it leaves was last seen.
func (a *Activities) RunnerHost(ctx context.Context, in RunnerHostInput) (RunnerHostResult, error) {
	out := RunnerHostResult{Host: a.Host}
	if out.Host == in.Gone {
		// This worker is the gone host by name but did not take the run
		// (a second worker with the same runner.host?): not back to it.
		out.Host = ""
	}
	if a.Fleet == nil || in.Gone == "" {
		return out, nil
	}
	hosts, err := a.Fleet.Hosts(ctx, time.Time{})
	if err != nil {
		return out, fmt.Errorf("reading when host %s was last seen: %w", in.Gone, err)
	}
	for _, h := range hosts {
		if h.Host == in.Gone {
			out.GoneSeenAt = h.SeenAt
		}
	}
	return out, nil
}
