package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// LeaseSweep is the lease of the sweep of ended workflows' open rows.
const LeaseSweep = "ssot.sweep"

// sweep keeps the store's open decisions and inboxes to workflows that
// run. A workflow saves its last state as it ends; one ended outside
// ampflow (terminated by hand in Temporal, timed out) never does, and
// its decisions and messages would be listed for ever. Every interval,
// each subject with open rows is checked against Temporal, and those of
// a workflow that no longer runs are cleared and its task marked
// terminated. One worker sweeps at a time, under a lease.
type sweep struct {
	store    *ssot.DB
	running  func(ctx context.Context, id string) (bool, error)
	interval time.Duration
	log      *slog.Logger
}

func (s sweep) run(ctx context.Context) error {
	if s.interval <= 0 {
		return nil // off
	}
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if n, err := s.once(ctx); err != nil {
			s.log.Warn("sweeping the SSOT's open rows", "error", err)
		} else if n > 0 {
			s.log.Info("cleared the open rows of ended workflows", "subjects", n)
		}
	}
}

// once sweeps one time and says how many subjects it cleared.
func (s sweep) once(ctx context.Context) (int, error) {
	ids, err := s.store.OpenSubjects(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		up, err := s.running(ctx, id)
		if err != nil {
			return n, err
		}
		if up {
			continue
		}
		if err := s.store.ClearOpen(ctx, id, string(task.StatusTerminated)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
