// Package transcripts serves the transcripts of a task's agent runs:
// GET /v1/tasks/{id}/transcript, a page of entries after a seq, or with
// follow=1 the entries as server-sent events as the runs write them.
package transcripts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Pattern is the route.
const Pattern = "GET /v1/tasks/{id}/transcript"

// Store reads transcripts and whether a task has ended (*ssot.DB).
type Store interface {
	Transcript(ctx context.Context, taskID string, f ssot.TranscriptFilter) ([]ssot.TranscriptEntry, error)
	Task(ctx context.Context, taskID string) (ssot.TaskState, error)
}

// Follow bounds.
const (
	// DefaultPoll is how often a follower looks for new entries.
	DefaultPoll = 50 * time.Millisecond
	// MaxFollow is how long one follow request streams; the client
	// reconnects with Last-Event-ID (or after) to go on.
	MaxFollow = 30 * time.Minute
	// keepAlive is how often an idle stream sends a comment.
	keepAlive = 15 * time.Second
)

// Options configure the route.
type Options struct {
	Store Store
	// Poll is how often a follower looks; zero is DefaultPoll.
	Poll time.Duration
	// MaxFollow bounds one follow request; zero is MaxFollow.
	MaxFollow time.Duration
}

// Page is the answer to a page of a transcript.
type Page struct {
	TaskID  string                 `json:"task_id"`
	Entries []ssot.TranscriptEntry `json:"entries"`
	// NextAfter is the seq to ask after for the next page: the last
	// entry's, or the request's after when the page is empty.
	NextAfter int64 `json:"next_after"`
}

type handler struct {
	api *httpapi.Server
	o   Options
}

// Register adds the route and its schemas to the API.
func Register(api *httpapi.Server, o Options) {
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.MaxFollow <= 0 {
		o.MaxFollow = MaxFollow
	}
	h := &handler{api: api, o: o}
	api.Add(httpapi.Spec{Schemas: schemas()}, httpapi.Route{Pattern: Pattern, Handler: h.get, Operation: operation()})
}

// query is a request's parameters.
type query struct {
	id     string
	f      ssot.TranscriptFilter
	follow bool
}

func parse(r *http.Request) (query, error) {
	q := query{id: r.PathValue("id")}
	if !task.ValidID(q.id) {
		return q, httpapi.InvalidField("id", fmt.Sprintf("must be a task id T-YYYY-NNN, not %q", q.id))
	}
	v := r.URL.Query()
	num := func(name string, max int64) (int64, error) {
		s := v.Get(name)
		if s == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > max {
			return 0, httpapi.InvalidField(name, fmt.Sprintf("must be a whole number from 0 to %d, not %q", max, s))
		}
		return n, nil
	}
	var err error
	if q.f.After, err = num("after", 1<<62); err != nil {
		return q, err
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" && v.Get("after") == "" {
		n, perr := strconv.ParseInt(id, 10, 64)
		if perr != nil || n < 0 {
			return q, httpapi.InvalidField("Last-Event-ID", fmt.Sprintf("must be an entry's seq, not %q", id))
		}
		q.f.After = n
	}
	limit, err := num("limit", ssot.MaxLimit)
	if err != nil {
		return q, err
	}
	if v.Get("limit") != "" && limit == 0 {
		return q, httpapi.InvalidField("limit", fmt.Sprintf("must be from 1 to %d", ssot.MaxLimit))
	}
	q.f.Limit = int(limit)
	run, err := num("run", 1<<30)
	if err != nil {
		return q, err
	}
	q.f.Run = int(run)
	switch role := v.Get("role"); role {
	case "", string(amp.RoleExecutor), string(amp.RoleReviewer):
		q.f.Role = role
	default:
		return q, httpapi.InvalidField("role", fmt.Sprintf("must be executor or reviewer, not %q", role))
	}
	switch f := v.Get("follow"); f {
	case "", "0", "false":
	case "1", "true":
		q.follow = true
	default:
		return q, httpapi.InvalidField("follow", fmt.Sprintf("must be 1 or 0, not %q", f))
	}
	return q, nil
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	q, err := parse(r)
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	if h.o.Store == nil {
		h.api.Error(w, r, task.Errorf(task.CodeUnavailable, "this worker has no SSOT to read transcripts from"))
		return
	}
	if q.follow {
		h.follow(w, r, q)
		return
	}
	es, err := h.o.Store.Transcript(r.Context(), q.id, q.f)
	if err != nil {
		h.api.Error(w, r, storeError(err))
		return
	}
	if len(es) == 0 && q.f.After == 0 {
		if _, err := h.o.Store.Task(r.Context(), q.id); errors.Is(err, ssot.ErrNotFound) {
			h.api.Error(w, r, task.Errorf(task.CodeNotFound, "no task %s", q.id))
			return
		}
	}
	next := q.f.After
	if len(es) > 0 {
		next = es[len(es)-1].Seq
	}
	httpapi.WriteJSON(w, http.StatusOK, Page{TaskID: q.id, Entries: es, NextAfter: next})
}

// follow streams entries as server-sent events (event "entry", id its
// seq, data the entry as JSON) until the client leaves, MaxFollow passes,
// or the task has ended and every entry is sent (event "end").
func (h *handler) follow(w http.ResponseWriter, r *http.Request, q query) {
	rc := http.NewResponseController(w)
	fl := flusher{rc}
	h.api.ExtendDeadlines(w, r, h.o.MaxFollow)
	ctx, cancel := context.WithTimeout(r.Context(), h.o.MaxFollow)
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": following\n\n")
	fl.Flush()
	tick := time.NewTicker(h.o.Poll)
	defer tick.Stop()
	lastSent := time.Now()
	f := q.f
	if f.Limit == 0 {
		f.Limit = ssot.MaxLimit
	}
	for {
		// Whether the task had ended is read before its entries: an
		// ended task's last entries are written by then.
		ended := h.ended(ctx, q.id)
		es, err := h.o.Store.Transcript(ctx, q.id, f)
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", jsonString(err.Error()))
				fl.Flush()
			}
			return
		}
		for _, e := range es {
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, "id: %d\nevent: entry\ndata: %s\n\n", e.Seq, b)
			f.After = e.Seq
		}
		switch {
		case len(es) > 0:
			fl.Flush()
			lastSent = time.Now()
			if len(es) == f.Limit {
				continue
			}
		case ended:
			fmt.Fprintf(w, "event: end\ndata: {\"task_id\":%s}\n\n", jsonString(q.id))
			fl.Flush()
			return
		case time.Since(lastSent) >= keepAlive:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
			lastSent = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// ended says whether the task is done or terminated in the store.
func (h *handler) ended(ctx context.Context, id string) bool {
	st, err := h.o.Store.Task(ctx, id)
	if err != nil {
		return false
	}
	return st.Status == string(task.StatusDone) || st.Status == string(task.StatusTerminated)
}

// flusher flushes through the API's response wrappers.
type flusher struct{ rc *http.ResponseController }

func (f flusher) Flush() { _ = f.rc.Flush() }

func storeError(err error) error {
	var inv *ssot.InvalidError
	if errors.As(err, &inv) {
		return httpapi.InvalidField(inv.Field, inv.Problem)
	}
	return task.Errorf(task.CodeUnavailable, "reading the transcript: %v", err)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
