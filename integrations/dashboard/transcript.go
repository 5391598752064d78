package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// transcriptReader reads runs' transcripts (*ssot.DB); a store without
// them shows none.
type transcriptReader interface {
	Transcript(ctx context.Context, taskID string, f ssot.TranscriptFilter) ([]ssot.TranscriptEntry, error)
}

// Bounds of a task page's transcript: the newest pageTranscript entries
// are rendered; the stream polls the store every transcriptPoll.
const (
	pageTranscript = 500
	transcriptPoll = 50 * time.Millisecond
)

// transcriptView is the transcript section of a task page.
type transcriptView struct {
	Entries []entryView
	// Cut is true when older entries are not shown.
	Cut bool
	// Last is the seq the live stream goes on after.
	Last int64
	// Cost is the cost so far of the latest run of each role, summed.
	Cost string
}

// entryView is one transcript entry as the page shows it.
type entryView struct {
	ssot.TranscriptEntry
	At   timeView
	Head string
}

func newEntryView(e ssot.TranscriptEntry) entryView {
	return entryView{TranscriptEntry: e, At: newTimeView(e.At), Head: entryHead(e)}
}

// entryHead is an entry's line: "executor #1 tool_result Bash exit 3".
func entryHead(e ssot.TranscriptEntry) string {
	s := fmt.Sprintf("%s #%d %s", e.Role, e.Run, e.Kind)
	if e.Tool != "" {
		s += " " + e.Tool
	}
	if e.ExitCode != nil {
		s += fmt.Sprintf(" exit %d", *e.ExitCode)
	} else if e.IsError {
		s += " failed"
	}
	return s
}

// transcript reads the newest entries of a task's transcript.
func (s *Server) transcript(ctx context.Context, id string) (transcriptView, error) {
	tr, ok := s.store.(transcriptReader)
	if !ok {
		return transcriptView{}, nil
	}
	var all []ssot.TranscriptEntry
	var v transcriptView
	for after := int64(0); ; {
		es, err := tr.Transcript(ctx, id, ssot.TranscriptFilter{After: after, Limit: ssot.MaxLimit})
		if err != nil {
			return v, fmt.Errorf("reading the transcript of %s: %w", id, err)
		}
		all = append(all, es...)
		if len(all) > pageTranscript {
			all, v.Cut = all[len(all)-pageTranscript:], true
		}
		if len(es) < ssot.MaxLimit {
			break
		}
		after = es[len(es)-1].Seq
	}
	cost := map[string]float64{}
	for _, e := range all {
		v.Entries = append(v.Entries, newEntryView(e))
		v.Last = e.Seq
		cost[fmt.Sprintf("%s#%d", e.Role, e.Run)] = e.CostUSD
	}
	var sum float64
	for _, c := range cost {
		sum += c
	}
	if len(all) > 0 {
		v.Cost = fmt.Sprintf("$%.4f", sum)
	}
	return v, nil
}

// transcriptEvents streams a task's transcript entries after Last-Event-ID
// (or after) as server-sent events, as the runs write them.
func (s *Server) transcriptEvents(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	tr, ok := s.store.(transcriptReader)
	if !ok || !task.ValidID(id) {
		http.Error(w, "no transcript", http.StatusNotFound)
		return
	}
	var after int64
	for _, s := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if s != "" {
			_, _ = fmt.Sscan(s, &after)
			break
		}
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(keepAlive + 10*time.Second))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte(": transcript\n\n")) {
		return
	}
	tick := time.NewTicker(transcriptPoll)
	defer tick.Stop()
	quiet := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		if !s.signedIn(v) {
			write([]byte("event: " + EventSignedOut + "\ndata: {}\n\n"))
			return
		}
		es, err := tr.Transcript(r.Context(), id, ssot.TranscriptFilter{After: after, Limit: ssot.MaxLimit})
		if err != nil {
			return
		}
		var b strings.Builder
		for _, e := range es {
			data, _ := json.Marshal(struct {
				ssot.TranscriptEntry
				Head string `json:"head"`
			}{e, entryHead(e)})
			fmt.Fprintf(&b, "id: %d\nevent: entry\ndata: %s\n\n", e.Seq, data)
			after = e.Seq
		}
		switch {
		case b.Len() > 0:
			if !write([]byte(b.String())) {
				return
			}
			quiet = time.Now()
		case time.Since(quiet) > keepAlive:
			if !write([]byte(": keep-alive\n\n")) {
				return
			}
			quiet = time.Now()
		}
	}
}
