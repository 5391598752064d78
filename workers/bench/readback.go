package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
)

// ErrReadMisses is returned, with the figures, when a task the bench
// started was not read back right after its start answered.
var ErrReadMisses = errors.New("started tasks were not read back at once")

// readBackShown is how many misses the error describes one by one.
const readBackShown = 5

// api is the HTTP API served on loopback over the bench's client and
// SSOT, read as a client reads it.
type api struct {
	base   string
	client *http.Client
	stop   func()

	mu     sync.Mutex
	reads  int
	misses []string
}

// serveAPI serves the HTTP API on a loopback port until stop.
func (b *bench) serveAPI() (*api, error) {
	srv := httpapi.New(httpapi.Options{Tasks: b.tasks, Store: b.store, Rate: -1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serving the HTTP API: %w", err)
	}
	hs := srv.HTTPServer()
	go hs.Serve(ln)
	return &api{base: "http://" + ln.Addr().String(), client: &http.Client{Timeout: time.Minute}, stop: func() { hs.Close() }}, nil
}

// getJSON reads path into out; a status other than 200 is an error.
func (a *api) getJSON(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("GET %s: decoding: %w", path, err)
	}
	return nil
}

// readBack reads a task just started through the three reads a client
// makes next: by id, its history (which holds its plan record), and the
// task list. Each read that does not find it is a miss.
func (a *api) readBack(ctx context.Context, taskID string) error {
	checks := []struct {
		what string
		read func() error
	}{
		{"GET /v1/tasks/{id}", func() error {
			var st task.State
			if err := a.getJSON(ctx, "/v1/tasks/"+taskID, &st); err != nil {
				return err
			}
			if st.TaskID != taskID {
				return fmt.Errorf("answered task %q", st.TaskID)
			}
			return nil
		}},
		{"GET /v1/tasks/{id}/history", func() error {
			var h httpapi.HistoryResponse
			if err := a.getJSON(ctx, "/v1/tasks/"+taskID+"/history", &h); err != nil {
				return err
			}
			plan := workflows.PlanRecordID(taskID)
			for _, r := range h.Records {
				if r.ID == plan {
					return nil
				}
			}
			return fmt.Errorf("%d records, none the plan record %s", len(h.Records), plan)
		}},
		{"GET /v1/tasks", func() error { return a.listed(ctx, taskID) }},
	}
	for _, c := range checks {
		err := c.read()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.mu.Lock()
		a.reads++
		if err != nil {
			a.misses = append(a.misses, fmt.Sprintf("%s of %s: %v", c.what, taskID, err))
		}
		a.mu.Unlock()
	}
	return nil
}

// listed pages GET /v1/tasks, newest first, until taskID is on a page.
func (a *api) listed(ctx context.Context, taskID string) error {
	q := url.Values{"limit": {"100"}}
	for pages := 0; ; pages++ {
		var l httpapi.ListResponse
		if err := a.getJSON(ctx, "/v1/tasks?"+q.Encode(), &l); err != nil {
			return err
		}
		if slices.ContainsFunc(l.Tasks, func(s workflows.TaskSummary) bool { return s.TaskID == taskID }) {
			return nil
		}
		if l.NextCursor == "" {
			return fmt.Errorf("not among the %d pages of tasks", pages+1)
		}
		q.Set("cursor", l.NextCursor)
	}
}

// result is the number of misses, and an error describing the first
// ones when there are any.
func (a *api) result() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.misses)
	if n == 0 {
		return 0, nil
	}
	shown := a.misses[:min(n, readBackShown)]
	return n, fmt.Errorf("%w: %d of %d reads missed a task right after its start, first: %q", ErrReadMisses, n, a.reads, shown)
}
