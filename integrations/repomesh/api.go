package repomesh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// The mesh's error codes (the document's), beside the API's own.
const (
	CodeLockConflict      task.Code = "LOCK_CONFLICT"
	CodeInvalidPayload    task.Code = "INVALID_PAYLOAD"
	CodePermissionDenied  task.Code = "PERMISSION_DENIED"
	CodeTaskClaimConflict task.Code = "TASK_CLAIM_CONFLICT"
)

// Leases is the way to the lease workflows (*workflows/lease.Client).
type Leases interface {
	Acquire(ctx context.Context, key string, req lease.AcquireRequest) (lease.AcquireResult, error)
	Renew(ctx context.Context, req lease.RenewRequest) (lease.Lease, error)
	Release(ctx context.Context, req lease.ReleaseRequest) (lease.Lease, error)
}

// Mesh is what the handlers read and write of the SSOT (*ssot.DB).
type Mesh interface {
	Lease(ctx context.Context, leaseID string) (ssot.MeshLease, error)
	CompareLease(ctx context.Context, l ssot.MeshLease, from int64, events []ssot.MeshEvent) (bool, error)
	Leases(ctx context.Context, f ssot.LeaseFilter, p ssot.Page) ([]ssot.MeshLease, string, error)
	AppendEvent(ctx context.Context, e ssot.MeshEvent) (ssot.MeshEvent, error)
	Event(ctx context.Context, id string) (ssot.MeshEvent, error)
	MarkRead(ctx context.Context, id, agent string, at time.Time) (ssot.MeshEvent, error)
	Thread(ctx context.Context, id string) ([]ssot.MeshEvent, error)
	MeshInbox(ctx context.Context, q ssot.InboxQuery, p ssot.Page) ([]ssot.MeshEvent, string, error)
	SearchEvents(ctx context.Context, q ssot.SearchQuery, p ssot.Page) ([]ssot.MeshEvent, string, error)
	TaskList(ctx context.Context, f ssot.TaskFilter, p ssot.Page) ([]ssot.TaskState, string, error)
	Task(ctx context.Context, taskID string) (ssot.TaskState, error)
}

// Tasks reaches the task workflows (*workflows.Client): a recovered
// agent's heartbeat goes to each task waiting for it, and a test failing
// BugAfter times starts a bug task.
type Tasks interface {
	Heartbeat(ctx context.Context, taskID string, in task.HeartbeatInput) error
	StartNext(ctx context.Context, in task.Input, year int) (string, error)
}

var _ Mesh = (*ssot.DB)(nil)

// API serves leases and the mesh on the HTTP API. Build it with
// Register.
type API struct {
	srv    *httpapi.Server
	leases Leases
	store  Mesh
	tasks  Tasks
	now    func() time.Time
	log    *slog.Logger
	// recovered rate-limits agents' restarts.
	recovered recoveries
}

// Options configure the lease and mesh routes.
type Options struct {
	Leases Leases
	Store  Mesh
	// Tasks, when set, gets a recovered agent's heartbeat for each task
	// waiting for its role.
	Tasks Tasks
	// Now is the clock; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Register builds the API and adds its routes to api.
func Register(api *httpapi.Server, o Options) *API {
	a := &API{srv: api, leases: o.Leases, store: o.Store, tasks: o.Tasks, now: o.Now, log: o.Logger}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	api.Add(spec(), a.routes()...)
	return a
}

func (a *API) routes() []httpapi.Route {
	h := map[string]http.HandlerFunc{
		"POST /v1/leases":                a.acquire,
		"GET /v1/leases":                 a.listLeases,
		"POST /v1/leases/{id}/heartbeat": a.renew,
		"DELETE /v1/leases/{id}":         a.release,
		"POST /v1/events":                a.postEvent,
		"GET /v1/events/inbox":           a.inbox,
		"GET /v1/events/search":          a.search,
		"GET /v1/events/{id}":            a.getEvent,
		"GET /v1/events/{id}/thread":     a.thread,
		"POST /v1/events/{id}/read":      a.markRead,
		"POST /v1/agents/{id}/heartbeat": a.agentHeartbeat,
	}
	var out []httpapi.Route
	for _, op := range operations() {
		out = append(out, httpapi.Route{Pattern: op.pattern, Handler: h[op.pattern], Operation: op.op})
	}
	return out
}

// mayActAs reports whether the caller may speak as agent: its own name
// or its token's id, or any name for an admin or an open API.
func mayActAs(c httpapi.Caller, agent string) bool {
	return c.Open || c.Role == amp.RoleAdmin || slices.Contains(selfNames(c), agent)
}

// selfNames are the names the caller goes by in the mesh: its token's
// name, and its id when the token has one.
func selfNames(c httpapi.Caller) []string {
	if c.ID != "" && c.ID != c.Name {
		return []string{c.Name, c.ID}
	}
	return []string{c.Name}
}

func isAdmin(c httpapi.Caller) bool { return c.Open || c.Role == amp.RoleAdmin }

// newID is a fresh event id.
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// storeError maps the store's errors to the API's.
func storeError(err error, what string) error {
	var inv *ssot.InvalidError
	switch {
	case errors.As(err, &inv):
		e := httpapi.InvalidField(inv.Field, inv.Problem)
		e.Err = err
		return e
	case errors.Is(err, ssot.ErrNotFound):
		return &task.Error{Code: task.CodeNotFound, Message: what + " not found", Err: err}
	}
	return err
}

// noLeases answers 503 when the API has no way to the lease workflows.
func (a *API) noLeases(w http.ResponseWriter, r *http.Request) bool {
	if a.leases == nil {
		a.srv.Error(w, r, task.Errorf(task.CodeUnavailable, "leases need Temporal, which this worker has no client for"))
		return true
	}
	return false
}

func (a *API) unavailable(w http.ResponseWriter, r *http.Request) bool {
	if a.store == nil {
		a.srv.Error(w, r, task.Errorf(task.CodeUnavailable, "the SSOT is not configured on this worker"))
		return true
	}
	return false
}
