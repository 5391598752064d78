package aof

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
// event log from interleaving their check-then-append; it guards
// dayIndexes too.
var aofEventsMu sync.Mutex

// dayIndex is what this process knows of one day's event log: the ids in
// it up to size bytes. A retried append checks it instead of reading the
// whole day's file again; lines others append (AOF's own tools) are read
// once, from size on.
type dayIndex struct {
	ids  map[string]bool
	size int64
}

// maxDayIndexes bounds the days whose ids are kept in memory.
const maxDayIndexes = 4

var dayIndexes = map[string]*dayIndex{}

// eventBytesScanned counts the bytes of event logs read to index them.
var eventBytesScanned int64

// dayIndexOf returns the index of the day's log p, open as f, brought up
// to date with what was appended since it was last read. Call it holding
// aofEventsMu.
func dayIndexOf(p string, f *os.File) (*dayIndex, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ix := dayIndexes[p]
	if ix == nil || st.Size() < ix.size {
		if len(dayIndexes) >= maxDayIndexes {
			clear(dayIndexes)
		}
		ix = &dayIndex{ids: map[string]bool{}}
		dayIndexes[p] = ix
	}
	if st.Size() == ix.size {
		return ix, nil
	}
	r := bufio.NewReader(io.NewSectionReader(f, ix.size, st.Size()-ix.size))
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			eventBytesScanned += int64(len(line))
			ix.size += int64(len(line))
			var ev struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.ID != "" {
				ix.ids[ev.ID] = true
			}
		}
		if errors.Is(err, io.EOF) {
			return ix, nil // a last line without its newline is read again next time
		}
		if err != nil {
			return nil, err
		}
	}
}
