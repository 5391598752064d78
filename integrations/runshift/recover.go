package runshift

import (
	"context"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/workflows/gate"
)

// RecoverAfter is how old a half-done signal must be before the recovery
// sweep finishes it: younger ones may still be in their request.
const RecoverAfter = 10 * time.Second

// recoverPage bounds one read of the sweep.
const recoverPage = 100

// Recovered counts what one sweep did.
type Recovered struct {
	// Started is how many pending gates had their workflow started (or
	// found started); Charged how many signals were charged to their task.
	Started, Charged int
}

// Recover finishes signals a crash left half done: a gated signal is
// recorded pending before its workflow starts, and charged to its task
// after it is recorded. Every pending gated signal older than
// RecoverAfter is started again (gate.Start is idempotent: a started or
// ended gate is left as it is), and every signal still to be charged is
// charged (a task suspended already is not asked again).
func (in *Intake) Recover(ctx context.Context) (Recovered, error) {
	var out Recovered
	before := in.now().Add(-RecoverAfter)
	var after ssot.GateRow
	for {
		rows, err := in.Store.StaleGates(ctx, before, after, recoverPage)
		if err != nil {
			return out, err
		}
		for _, g := range rows {
			if g.Gated && g.Status == string(gate.StatusPending) && g.Kind == string(gate.KindSignal) {
				if err := in.restart(ctx, g); err != nil {
					return out, err
				}
				out.Started++
			}
			if g.TaskCharge && in.charge(ctx, g) {
				out.Charged++
			}
		}
		if len(rows) < recoverPage {
			return out, nil
		}
		after = rows[len(rows)-1]
	}
}

// RecoverLoop runs Recover now and then every interval until ctx ends;
// run it on one worker at a time (under a lease).
func (in *Intake) RecoverLoop(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rec, err := in.Recover(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			in.log().Warn("recovering half-done signals", "err", err)
		case rec.Started > 0 || rec.Charged > 0:
			in.log().Info("recovered half-done signals", "gates_started", rec.Started, "tasks_charged", rec.Charged)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
