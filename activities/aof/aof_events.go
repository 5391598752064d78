package aof

import (
	"context"
	"fmt"
	"sync"

	"github.com/ampflow/ampflow/activities/ssot"
)

// AOFEventLog writes the events the HTTP layer logs itself (receipts,
// rejections, refused delegations) where a task's own events go: to the
// store and, when DataDir is set, to the day's events/<YYYY-MM-DD>.jsonl
// of AOF's layout, so AOF's tools see them too. It is not an activity:
// the API calls it directly.
type AOFEventLog struct {
	Store interface {
		SaveAOF(ctx context.Context, in ssot.AOFSave) error
	}
	// DataDir is aof.data_dir; empty mirrors nothing.
	DataDir string
}

// SaveAOF saves in (events only are expected) and mirrors its events.
func (l *AOFEventLog) SaveAOF(ctx context.Context, in ssot.AOFSave) error {
	if err := l.Store.SaveAOF(ctx, in); err != nil {
		return err
	}
	if l.DataDir == "" {
		return nil
	}
	m := &AOF{DataDir: l.DataDir}
	for _, e := range in.Events {
		if err := m.appendEvent(e); err != nil {
			return fmt.Errorf("mirroring AOF event %s under %s: %w", e.ID, l.DataDir, err)
		}
	}
	return nil
}

// aofEventsMu keeps the API's and the workflows' appends to one day's
// event log from interleaving their check-then-append.
var aofEventsMu sync.Mutex
