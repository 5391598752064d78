package workflows

import (
	"context"
	"fmt"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// Origins keeps which task each tracker's item started (*ssot.DB): the
// claim that makes one item one task across workers and restarts.
type Origins interface {
	ClaimOrigin(ctx context.Context, o ssot.Origin) (held ssot.Origin, won bool, err error)
	SetOriginTask(ctx context.Context, source, externalID, taskID string) (string, error)
	Origin(ctx context.Context, source, externalID string) (ssot.Origin, error)
}

var _ Origins = (*ssot.DB)(nil)

// OriginClaimWait is how long a start waits for another start of the same
// item, which claimed it and has not named its task yet, before taking the
// claim over (its claimant died between claim and start).
const OriginClaimWait = 20 * time.Second

// originPoll is how often a waiting start reads the claim again.
const originPoll = 100 * time.Millisecond

// StartOnce starts in as the one task of its origin (in.Origin is
// required): the first start of an item claims it in the store and starts
// the task under in.TaskID, or the year's next free id without one; every
// later start, from any worker, answers with that task and started false.
// A claimant that died before naming its task is taken over after
// OriginClaimWait, and the start it may have made is found by its request
// key, so the item still starts one task.
func StartOnce(ctx context.Context, tasks Tasks, origins Origins, in task.Input, year int) (taskID string, started bool, err error) {
	o := in.Origin
	if o == nil {
		return "", false, task.Errorf(task.CodeInvalid, "starting a task once needs its origin")
	}
	held, won, err := origins.ClaimOrigin(ctx, ssot.Origin{Source: o.Source, ExternalID: o.ExternalID, URL: o.URL, ClaimedAt: time.Now()})
	if err != nil {
		return "", false, originError(o, err)
	}
	if !won {
		if held, err = waitClaim(ctx, origins, held); err != nil {
			return "", false, originError(o, err)
		}
		if held.TaskID != "" {
			return held.TaskID, false, nil
		}
	}
	in.RequestKey = originKey(*o)
	if in.TaskID != "" {
		err = tasks.Start(ctx, in)
		taskID = in.TaskID
	} else {
		taskID, err = tasks.StartNext(ctx, in, year)
	}
	if err != nil {
		return "", false, err
	}
	named, err := origins.SetOriginTask(ctx, o.Source, o.ExternalID, taskID)
	if err != nil {
		return "", false, originError(o, err)
	}
	return named, named == taskID, nil
}

// waitClaim waits until the claim held names its task or is older than
// OriginClaimWait.
func waitClaim(ctx context.Context, origins Origins, held ssot.Origin) (ssot.Origin, error) {
	t := time.NewTicker(originPoll)
	defer t.Stop()
	for held.TaskID == "" && time.Since(held.ClaimedAt) < OriginClaimWait {
		select {
		case <-ctx.Done():
			return held, ctx.Err()
		case <-t.C:
		}
		var err error
		if held, err = origins.Origin(ctx, held.Source, held.ExternalID); err != nil {
			return held, err
		}
	}
	return held, nil
}

// originKey is the request key of an origin's start: not scoped to a
// caller, since any caller starting the item means the same task.
func originKey(o task.Origin) string {
	return RequestKey("origin\x00"+o.Source, o.ExternalID)
}

func originError(o *task.Origin, err error) *task.Error {
	return &task.Error{Code: task.CodeUnavailable, Err: err,
		Message: fmt.Sprintf("claiming %s %s in the SSOT failed: %v", o.Source, o.ExternalID, err)}
}
