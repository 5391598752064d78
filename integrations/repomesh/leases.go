package repomesh

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// AcquireRequest is POST /v1/leases.
type AcquireRequest struct {
	ResourceKey string `json:"resource_key"`
	// AgentID is who takes the lease; empty is the caller.
	AgentID    string `json:"agent_id,omitempty"`
	TTLSeconds int    `json:"ttl_seconds"`
}

// HeartbeatRequest is POST /v1/leases/{id}/heartbeat: the document's lock
// heartbeat.
type HeartbeatRequest struct {
	// AgentID is the holder; empty is the caller.
	AgentID string `json:"agent_id,omitempty"`
	// TTL is the new time to live in seconds; zero keeps the lease's.
	TTL int `json:"ttl,omitempty"`
}

// Lease is a lease as the API answers it.
type Lease struct {
	LeaseID       string    `json:"lease_id"`
	ResourceKey   string    `json:"resource_key"`
	AgentID       string    `json:"agent_id"`
	State         string    `json:"state"`
	TTLSeconds    int       `json:"ttl_seconds"`
	AcquiredAt    time.Time `json:"acquired_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	LastHeartbeat time.Time `json:"last_heartbeat"`
	AutoRelease   bool      `json:"auto_release"`
	ReleasedAt    time.Time `json:"released_at,omitzero"`
	Reason        string    `json:"reason,omitempty"`
}

// LeaseList is GET /v1/leases.
type LeaseList struct {
	Leases     []Lease `json:"leases"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// ConflictBody is the 409 of an acquire: the document's LOCK_CONFLICT.
type ConflictBody struct {
	Error ConflictDetail `json:"error"`
}

// ConflictDetail names the holder and when to try again.
type ConflictDetail struct {
	Code         task.Code `json:"code"`
	Message      string    `json:"message"`
	Holder       string    `json:"holder"`
	RetryAfterMS int64     `json:"retry_after_ms"`
}

func leaseOf(l lease.Lease) Lease {
	return Lease{LeaseID: l.LeaseID, ResourceKey: l.ResourceKey, AgentID: l.AgentID, State: l.State,
		TTLSeconds: l.TTLSeconds, AcquiredAt: l.AcquiredAt.UTC(), ExpiresAt: l.ExpiresAt.UTC(),
		LastHeartbeat: l.LastHeartbeat.UTC(), AutoRelease: true, ReleasedAt: utc(l.ReleasedAt), Reason: l.Reason}
}

func storedLease(l ssot.MeshLease) Lease {
	return Lease{LeaseID: l.LeaseID, ResourceKey: l.ResourceKey, AgentID: l.AgentID, State: l.State,
		TTLSeconds: l.TTLSeconds, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt, LastHeartbeat: l.LastHeartbeat,
		AutoRelease: true, ReleasedAt: l.ReleasedAt, Reason: l.Reason}
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// denied refuses the caller speaking as agent and tells it in the mesh.
func (a *API) denied(w http.ResponseWriter, r *http.Request, action, agent string) {
	c := httpapi.CallerOf(r)
	msg := fmt.Sprintf("%s may act only as itself, not as %s", c.Name, agent)
	a.tellError(r, action, CodePermissionDenied, msg, 0, nil)
	a.srv.Error(w, r, &task.Error{Code: CodePermissionDenied, Message: msg})
}

// ReservedKeyPrefixes are the prefixes of the resource keys the system
// takes itself: a task's branch (task.BranchLeaseKey), a claim (ClaimKey,
// taken through a task.claimed event) and an AOF task's run (the AOF's
// LeaseKey). No caller of POST /v1/leases, admin or agent, takes one:
// whoever held repo:app:main would stop every task on that branch.
var ReservedKeyPrefixes = []string{"repo:", "task:", "aof/"}

// ReservedPrefix is the reserved prefix key starts with, or "".
func ReservedPrefix(key string) string {
	for _, p := range ReservedKeyPrefixes {
		if strings.HasPrefix(key, p) {
			return p
		}
	}
	return ""
}

func (a *API) acquire(w http.ResponseWriter, r *http.Request) {
	if a.noLeases(w, r) {
		return
	}
	var in AcquireRequest
	if err := a.srv.Decode(w, r, &in); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	c := httpapi.CallerOf(r)
	if in.AgentID == "" {
		in.AgentID = c.Name
	}
	if err := lease.CheckKey(in.ResourceKey); err != nil {
		a.srv.Error(w, r, httpapi.InvalidField("resource_key", trimField(err)))
		return
	}
	if err := lease.CheckTTL("ttl_seconds", in.TTLSeconds); err != nil {
		a.srv.Error(w, r, httpapi.InvalidField("ttl_seconds", trimField(err)))
		return
	}
	if !mayActAs(c, in.AgentID) {
		a.denied(w, r, "lease.acquire", in.AgentID)
		return
	}
	if p := ReservedPrefix(in.ResourceKey); p != "" {
		problem := fmt.Sprintf("is reserved: keys starting %q are the system's own", p)
		msg := "resource_key: " + problem
		a.tellError(r, "lease.acquire", CodePermissionDenied, msg, 0, map[string]any{"resource_key": in.ResourceKey})
		a.srv.Error(w, r, httpapi.FieldError(CodePermissionDenied, "resource_key", problem))
		return
	}
	res, err := a.leases.Acquire(r.Context(), in.ResourceKey, lease.AcquireRequest{AgentID: in.AgentID, TTLSeconds: in.TTLSeconds})
	if err != nil {
		a.srv.Error(w, r, leaseError(err))
		return
	}
	if cf := res.Conflict; cf != nil {
		msg := fmt.Sprintf("%s is held by %s", in.ResourceKey, cf.Holder)
		a.tellError(r, "lease.acquire", CodeLockConflict, msg, cf.RetryAfterMS, map[string]any{"holder": cf.Holder, "resource_key": in.ResourceKey})
		// As the server logs every refusal; the body carries more than
		// its error body can.
		a.log.Debug("HTTP API request refused", "method", r.Method, "path", r.URL.Path, "code", CodeLockConflict, "err", msg)
		w.Header().Set("Retry-After", strconv.FormatInt((cf.RetryAfterMS+999)/1000, 10))
		httpapi.WriteJSON(w, http.StatusConflict, ConflictBody{ConflictDetail{Code: CodeLockConflict, Message: msg,
			Holder: cf.Holder, RetryAfterMS: cf.RetryAfterMS}})
		return
	}
	st := http.StatusCreated
	if res.Lease.LastHeartbeat.After(res.Lease.AcquiredAt) {
		st = http.StatusOK // the holder asked again: a renewal
	}
	httpapi.WriteJSON(w, st, leaseOf(*res.Lease))
}

func trimField(err error) string {
	s := err.Error()
	for i := 0; i+2 <= len(s); i++ {
		if s[i:i+2] == ": " {
			return s[i+2:]
		}
	}
	return s
}

func leaseError(err error) error {
	var ref *lease.RefusedError
	if errors.As(err, &ref) {
		switch ref.Type {
		case lease.ErrNotHeld:
			return &task.Error{Code: task.CodeNotFound, Message: ref.Message + " (released or expired)", Err: err}
		case lease.ErrNotHolder:
			return &task.Error{Code: CodePermissionDenied, Message: ref.Message, Err: err}
		default:
			return &task.Error{Code: task.CodeInvalid, Message: ref.Message, Err: err}
		}
	}
	return &task.Error{Code: task.CodeUnavailable, Message: "the lease workflow did not answer: " + err.Error(), Err: err}
}

// leaseRefused answers the lease workflow's refusal; a caller not the
// holder is told in the mesh too, as every PERMISSION_DENIED is.
func (a *API) leaseRefused(w http.ResponseWriter, r *http.Request, action string, err error) {
	err = leaseError(err)
	var te *task.Error
	if errors.As(err, &te) && te.Code == CodePermissionDenied {
		a.tellError(r, action, CodePermissionDenied, te.Message, 0, nil)
	}
	a.srv.Error(w, r, err)
}

func (a *API) renew(w http.ResponseWriter, r *http.Request) {
	if a.noLeases(w, r) {
		return
	}
	var in HeartbeatRequest
	if err := a.srv.Decode(w, r, &in); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	id := r.PathValue("id")
	c := httpapi.CallerOf(r)
	if in.AgentID == "" {
		in.AgentID = c.Name
	}
	if !mayActAs(c, in.AgentID) {
		a.denied(w, r, "lease.heartbeat", in.AgentID)
		return
	}
	if in.TTL == 0 && a.store != nil {
		// The lease's own TTL, from the SSOT; a lease it does not know
		// as active is not held.
		l, err := a.store.Lease(r.Context(), id)
		switch {
		case errors.Is(err, ssot.ErrNotFound) || (err == nil && l.State != lease.StateActive):
			a.srv.Error(w, r, &task.Error{Code: task.CodeNotFound, Message: "lease " + id + " is not held (released or expired)"})
			return
		case err == nil:
			in.TTL = l.TTLSeconds
		}
	}
	if err := lease.CheckTTL("ttl", in.TTL); err != nil {
		a.srv.Error(w, r, httpapi.InvalidField("ttl", trimField(err)))
		return
	}
	l, err := a.leases.Renew(r.Context(), lease.RenewRequest{LeaseID: id, AgentID: in.AgentID, TTLSeconds: in.TTL})
	if err != nil {
		a.leaseRefused(w, r, "lease.heartbeat", err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, leaseOf(l))
}

func (a *API) release(w http.ResponseWriter, r *http.Request) {
	if a.noLeases(w, r) {
		return
	}
	c := httpapi.CallerOf(r)
	l, err := a.leases.Release(r.Context(), lease.ReleaseRequest{LeaseID: r.PathValue("id"), AgentID: c.Name, Admin: isAdmin(c)})
	var ref *lease.RefusedError
	if errors.As(err, &ref) && ref.Type == lease.ErrNotHeld && isAdmin(c) {
		if held, ok, derr := a.releaseDirect(r, r.PathValue("id"), c.Name); derr != nil {
			a.srv.Error(w, r, storeError(derr, "lease"))
			return
		} else if ok {
			httpapi.WriteJSON(w, http.StatusOK, storedLease(held))
			return
		}
	}
	if err != nil {
		a.leaseRefused(w, r, "lease.release", err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, leaseOf(l))
}

// releaseDirect ends, for an admin, an active lease that no lease workflow
// holds: a task's branch lease taken directly in the store. Its version is
// raised, so the task's next renewal finds the lease lost. ok is false
// when the store holds no such active lease.
func (a *API) releaseDirect(r *http.Request, leaseID, admin string) (ssot.MeshLease, bool, error) {
	cur, err := a.store.Lease(r.Context(), leaseID)
	if errors.Is(err, ssot.ErrNotFound) || (err == nil && cur.State != lease.StateActive) {
		return ssot.MeshLease{}, false, nil
	}
	if err != nil {
		return ssot.MeshLease{}, false, err
	}
	now := a.now()
	next := cur
	next.State, next.Reason, next.ReleasedAt, next.Version = lease.StateReleased, lease.ReasonAdmin, now, cur.Version+1
	ok, err := a.store.CompareLease(r.Context(), next, cur.Version, nil)
	if err != nil || !ok {
		return ssot.MeshLease{}, false, err
	}
	a.log.Info("lease released by an admin in the store", "lease_id", leaseID, "resource_key", cur.ResourceKey, "holder", cur.AgentID, "admin", admin)
	return next, true, nil
}

var leaseStates = []string{lease.StateActive, lease.StateExpired, lease.StateReleased}

func (a *API) listLeases(w http.ResponseWriter, r *http.Request) {
	if a.unavailable(w, r) {
		return
	}
	q := r.URL.Query()
	f := ssot.LeaseFilter{AgentID: q.Get("agent_id"), State: q.Get("state")}
	if f.State != "" && !slices.Contains(leaseStates, f.State) {
		a.srv.Error(w, r, httpapi.InvalidField("state", "must be active, expired or released"))
		return
	}
	p, err := pageOf(q.Get("limit"), q.Get("cursor"), ssot.DefaultLimit, ssot.MaxLimit)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	rows, next, err := a.store.Leases(r.Context(), f, p)
	if err != nil {
		a.srv.Error(w, r, storeError(err, "lease"))
		return
	}
	out := LeaseList{Leases: []Lease{}, NextCursor: next}
	for _, l := range rows {
		out.Leases = append(out.Leases, storedLease(l))
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func pageOf(limit, cursor string, def, max int) (ssot.Page, error) {
	p := ssot.Page{Limit: def, Cursor: cursor}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > max {
			return p, httpapi.InvalidField("limit", fmt.Sprintf("must be from 1 to %d", max))
		}
		p.Limit = n
	}
	return p, nil
}
