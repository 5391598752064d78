// Package fleet serves the fleet of runner hosts on ampflow's HTTP API:
// each worker that runs agent CLIs, its slots, its runs and its queue, as
// the workers write them to the SSOT (GET /v1/fleet, `ampflow fleet`).
package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Records is what the routes read of the SSOT.
type Records interface {
	Hosts(ctx context.Context, since time.Time) ([]ssot.Host, error)
}

// Timing of the fleet: a host writes itself every PublishEvery, is alive
// while its last write is younger than AliveWithin, and listed until it
// is ListedFor old.
const (
	PublishEvery = 5 * time.Second
	AliveWithin  = 30 * time.Second
	ListedFor    = time.Hour
)

// Run is one agent CLI run on a host, or one waiting for its slot
// (Started zero), as its worker wrote it.
type Run struct {
	delivery.SlotRun
	// For is how long it has run, or waited in the queue, in seconds.
	For float64 `json:"for_seconds"`
}

// Host is one runner host as GET /v1/fleet shows it.
type Host struct {
	Host string `json:"host"`
	// Alive is false once the host has not written itself for
	// AliveWithin: its worker stopped or died.
	Alive     bool      `json:"alive"`
	Slots     int       `json:"slots"`
	InUse     int       `json:"in_use"`
	Running   []Run     `json:"running"`
	Queue     []Run     `json:"queue"`
	StartedAt time.Time `json:"started_at"`
	SeenAt    time.Time `json:"seen_at"`
}

// Response is the answer of GET /v1/fleet.
type Response struct {
	Hosts []Host `json:"hosts"`
	// Running and Queued count the runs of the hosts alive.
	Running int `json:"running"`
	Queued  int `json:"queued"`
}

// Options configure the routes; Store is required.
type Options struct {
	Store  Records
	Now    func() time.Time
	Logger *slog.Logger
}

type api struct {
	srv   *httpapi.Server
	store Records
	now   func() time.Time
	log   *slog.Logger
}

// Register adds GET /v1/fleet to srv.
func Register(srv *httpapi.Server, o Options) {
	a := &api{srv: srv, store: o.Store, now: o.Now, log: cmp.Or(o.Logger, slog.Default())}
	if a.now == nil {
		a.now = time.Now
	}
	srv.Add(httpapi.Spec{Schemas: schemas}, httpapi.Route{Pattern: "GET /v1/fleet", Roles: []amp.Role{amp.RoleCoordinator, amp.RoleAdmin},
		Handler: a.get, Operation: opFleet})
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	now := a.now()
	rows, err := a.store.Hosts(r.Context(), now.Add(-ListedFor))
	if err != nil {
		a.log.Error("reading the fleet", "error", err)
		a.srv.Error(w, r, &task.Error{Code: task.CodeUnavailable, Message: "reading the fleet from the SSOT failed; retry"})
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, View(rows, now))
}

// slotsJSON is what a worker writes of its slots (delivery.SlotsView).
type slotsJSON struct {
	Running []Run `json:"running"`
	Queue   []Run `json:"queue"`
}

// View is the fleet of rows as of now.
func View(rows []ssot.Host, now time.Time) Response {
	resp := Response{Hosts: make([]Host, 0, len(rows))}
	for _, row := range rows {
		var s slotsJSON
		_ = json.Unmarshal(row.Runs, &s)
		h := Host{Host: row.Host, Alive: now.Sub(row.SeenAt) < AliveWithin, Slots: row.Slots, InUse: len(s.Running),
			Running: orEmpty(s.Running), Queue: orEmpty(s.Queue), StartedAt: row.StartedAt, SeenAt: row.SeenAt}
		for i := range h.Running {
			h.Running[i].For = now.Sub(h.Running[i].Started).Round(time.Second).Seconds()
		}
		for i := range h.Queue {
			h.Queue[i].For = now.Sub(h.Queue[i].Queued).Round(time.Second).Seconds()
		}
		if h.Alive {
			resp.Running += len(h.Running)
			resp.Queued += len(h.Queue)
		}
		resp.Hosts = append(resp.Hosts, h)
	}
	return resp
}

func orEmpty(runs []Run) []Run {
	if runs == nil {
		return []Run{}
	}
	return runs
}
