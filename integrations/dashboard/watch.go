package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
)

// IdlePoll is how often the store is looked at while no page is open; a
// page that opens wakes the watcher at once.
const IdlePoll = 5 * time.Second

// Watch reads the store's marks every Poll and publishes what changed
// to the open pages, until ctx ends. One Watch runs per process: it sees
// the writes of every worker, since they share the store. While no page
// is open it looks every IdlePoll.
func (s *Server) Watch(ctx context.Context) error {
	t := time.NewTimer(s.poll)
	defer t.Stop()
	defer s.hub.closeAll()
	var prev ssot.Marks
	have := false
	for {
		m, err := s.store.Marks(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("dashboard: reading the store's changes", "error", err)
		case err == nil:
			if have {
				s.publishChanges(ctx, prev, m)
			}
			prev, have = m, true
			s.lookedOnce.Do(func() { close(s.looked) })
		}
		wait := s.poll
		if !s.hub.watched() {
			wait = max(IdlePoll, s.poll)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.hub.wake:
			t.Stop() // since Go 1.23 a stopped timer keeps no stale tick
		}
	}
}

type taskEvent struct {
	TaskID   string `json:"task_id"`
	Status   string `json:"status,omitempty"`
	Previous string `json:"previous,omitempty"`
}

type subjectEvent struct {
	Subject string `json:"subject"`
	Rev     int64  `json:"rev"`
}

type meshEvent struct {
	Seq int64 `json:"seq"`
}

type recordEvent struct {
	TaskID string `json:"task_id"`
	Seq    int64  `json:"seq"`
}

type decisionEvent struct {
	ID      string    `json:"id"`
	Subject string    `json:"subject"`
	Option  string    `json:"option,omitempty"`
	Label   string    `json:"label,omitempty"`
	By      string    `json:"by,omitempty"`
	Channel string    `json:"channel,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

// publishChanges publishes the difference between two looks, in a
// stable order: records, then task states, then decisions.
func (s *Server) publishChanges(ctx context.Context, prev, cur ssot.Marks) {
	for _, id := range sortedKeys(cur.Heads) {
		if seq := cur.Heads[id]; seq != prev.Heads[id] {
			s.hub.publish(EventRecord, recordEvent{TaskID: id, Seq: seq})
		}
	}
	for _, id := range sortedKeys(cur.Tasks) {
		t, old := cur.Tasks[id], prev.Tasks[id]
		if t != old {
			s.hub.publish(EventTask, taskEvent{TaskID: id, Status: t.Status, Previous: old.Status})
		}
	}
	for _, id := range sortedKeys(cur.Subjects) {
		if rev := cur.Subjects[id]; rev != prev.Subjects[id] {
			s.hub.publish(EventSubject, subjectEvent{Subject: id, Rev: rev})
		}
	}
	if cur.Refusals > prev.Refusals {
		ids, err := s.store.RefusalsAfter(ctx, prev.Refusals)
		if err != nil {
			s.log.Warn("dashboard: reading new refusals", "error", err)
		}
		slices.Sort(ids)
		for _, id := range ids {
			s.hub.publish(EventRefusal, taskEvent{TaskID: id})
		}
	}
	if cur.Mesh != prev.Mesh {
		s.hub.publish(EventMesh, meshEvent{Seq: cur.Mesh})
	}
	for _, id := range sortedKeys(prev.Pending) {
		if _, open := cur.Pending[id]; !open {
			s.hub.publish(EventDecisionClosed, s.closed(ctx, id, prev.Pending[id]))
		}
	}
	for _, id := range sortedKeys(cur.Pending) {
		if _, was := prev.Pending[id]; !was {
			s.hub.publish(EventDecisionOpened, decisionEvent{ID: id, Subject: cur.Pending[id]})
		}
	}
}

// closed says who closed a decision, from its outcome record when the
// subject keeps one.
func (s *Server) closed(ctx context.Context, id, subject string) decisionEvent {
	e := decisionEvent{ID: id, Subject: subject}
	rec, err := s.store.Get(ctx, id+"-outcome")
	if err != nil {
		return e
	}
	var o decision.Outcome
	if json.Unmarshal(rec.Body, &o) != nil || o.DecisionID != id {
		return e
	}
	e.Option, e.By, e.Channel, e.At = o.Option, o.By, o.Channel, o.At
	if d, err := s.store.Get(ctx, id); err == nil {
		var dec decision.Decision
		if json.Unmarshal(d.Body, &dec) == nil {
			if opt, ok := dec.Option(o.Option); ok {
				e.Label = opt.Label
			}
		}
	}
	return e
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// keepAlive is how often an idle event stream gets a comment, so proxies
// keep it open.
const keepAlive = 15 * time.Second

// EventSignedOut ends a stream whose session has expired: the page
// signs in again before it hears more.
const EventSignedOut = "signed_out"

// signedIn reports whether v's session still holds: a stream outlives
// the request that checked it.
func (s *Server) signedIn(v viewer) bool {
	_, ok := s.auth.session(v.session)
	return v.Open || ok
}

// events is the server-sent event stream every page opens.
func (s *Server) events(w http.ResponseWriter, r *http.Request, v viewer) {
	rc := http.NewResponseController(w)
	sub, backlog, reset := s.hub.subscribe(r.Header.Get("Last-Event-ID"))
	defer s.hub.unsubscribe(sub)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(e Event) bool {
		// The API's server bounds each write; a stream extends it.
		_ = rc.SetWriteDeadline(time.Now().Add(keepAlive + 10*time.Second))
		if _, err := w.Write(formatEvent(e)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	hello := Event{ID: s.hub.lastID(), Type: "hello", Data: json.RawMessage(`{}`)}
	if reset {
		hello.Type = EventReset
	}
	if !write(hello) {
		return
	}
	for _, e := range backlog {
		if !write(e) {
			return
		}
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-sub.ch:
			if !ok {
				return // dropped for falling behind; the browser reconnects
			}
			if !s.signedIn(v) {
				write(Event{Type: EventSignedOut, Data: json.RawMessage(`{}`)})
				return
			}
			if !write(e) {
				return
			}
		case <-tick.C:
			if !s.signedIn(v) {
				write(Event{Type: EventSignedOut, Data: json.RawMessage(`{}`)})
				return
			}
			_ = rc.SetWriteDeadline(time.Now().Add(keepAlive + 10*time.Second))
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// formatEvent writes e in the text/event-stream format; an empty id
// leaves the browser's last id as it was.
func formatEvent(e Event) []byte {
	b := make([]byte, 0, len(e.Data)+64)
	if e.ID != "" {
		b = append(b, "id: "+e.ID+"\n"...)
	}
	b = append(b, "event: "+e.Type+"\ndata: "...)
	b = append(b, e.Data...)
	return append(b, "\n\n"...)
}
