package workers

import (
	"context"
	"log/slog"
	"sync"

	"github.com/ampflow/ampflow/activities"
)

// exportQueue runs the git export (ssot.git) beside the record path: a
// write marks its task, and one goroutine exports the marked tasks a
// batch at a time, so a slow git or push never holds up a task. A task
// marked again while its export runs is exported once more after it. The
// first export is a whole one, which catches up on what a worker killed
// before its export never wrote. An export that fails is logged; the
// task's next write, or `ampflow ssot export`, catches up.
type exportQueue struct {
	exp *activities.Exporter
	log *slog.Logger

	mu      sync.Mutex
	whole   bool
	pending map[string]bool
	wake    chan struct{}
	stop    context.CancelFunc
	done    chan struct{}
}

func startExport(exp *activities.Exporter, log *slog.Logger) *exportQueue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &exportQueue{exp: exp, log: log, whole: true, pending: map[string]bool{}, wake: make(chan struct{}, 1), stop: cancel, done: make(chan struct{})}
	q.wake <- struct{}{}
	go q.run(ctx)
	return q
}

// mark queues a task for export; it never blocks.
func (q *exportQueue) mark(taskID string) {
	q.mu.Lock()
	q.pending[taskID] = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *exportQueue) run(ctx context.Context) {
	defer close(q.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		q.mu.Lock()
		whole := q.whole
		ids := make([]string, 0, len(q.pending))
		for id := range q.pending {
			ids = append(ids, id)
		}
		clear(q.pending)
		q.whole = false
		q.mu.Unlock()
		if whole {
			ids = nil // Export with no ids exports every task
		} else if len(ids) == 0 {
			continue
		}
		res, err := q.exp.Export(ctx, ids...)
		if err != nil && ctx.Err() == nil {
			q.log.Error("exporting the SSOT to git (ssot.git)", "tasks", len(ids), "error", err)
		}
		// A chain the export refuses is left as last exported: the store
		// holds something other than what was anchored, for an admin to see.
		for _, r := range res.Refused {
			q.log.Error("the SSOT export refused a task's chain (ssot.git); its exported file is left as it was", "task", r.TaskID, "problem", r.Problem)
		}
	}
}

// close stops the queue after the export running, if any.
func (q *exportQueue) close() {
	q.stop()
	<-q.done
}
