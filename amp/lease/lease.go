// Package lease holds the lease system's model: what a lease, its requests
// and its changes are, and how keys, agents and TTLs are checked. The
// lease workflow (workflows/lease), its activities (activities/lease) and
// RepoMesh's wire format (integrations/repomesh) share it.
package lease

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ampflow/ampflow/amp/decision"
)

// WorkflowType is the registered name of Workflow.
const WorkflowType = "ampflow.lease"

// Update and query names, with their payloads beside them.
const (
	// UpdateAcquire takes the key for an agent: AcquireRequest in,
	// AcquireResult out. The holder asking again renews.
	UpdateAcquire = "lease.acquire"
	// UpdateRenew is the holder's heartbeat: RenewRequest in, Lease out.
	UpdateRenew = "lease.renew"
	// UpdateRelease gives the key up: ReleaseRequest in, Lease out.
	UpdateRelease = "lease.release"
	// QueryState answers the current Lease (State "released" when free).
	QueryState = "lease.state"
	// UpdateWait takes the key for a workflow or puts it in the key's
	// queue: WaitRequest in, AcquireResult out (Queued set when queued).
	// When the key is next free it passes to the first waiter inside the
	// lease workflow, which then signals the waiter's workflow with
	// WaitRequest.Signal and a Grant: no other holder can come between.
	UpdateWait = "lease.wait"
	// UpdateLeave gives up an agent's place in the queue and its lease,
	// whichever it has: LeaveRequest in, LeaveResult out.
	UpdateLeave = "lease.leave"
)

// MaxQueue bounds the waiters of one key.
const MaxQueue = 1000

// ActivityChanged is the activity a lease workflow calls on every change
// (Change in, nothing out): it writes the lease row and its mesh events.
const ActivityChanged = "LeaseChanged"

// States of a lease.
const (
	StateActive   = "active"
	StateExpired  = "expired"
	StateReleased = "released"
)

// Reasons a lease ended.
const (
	ReasonReleased       = "released"        // by its holder
	ReasonAdmin          = "admin"           // by an admin
	ReasonExpired        = "expired"         // no heartbeat within the TTL
	ReasonAgentInactive  = "agent_inactive"  // the holder reported inactive
	ReasonAgentRecovered = "agent_recovered" // the holder restarted after a crash
	ReasonTaskEnded      = "task_ended"      // the task that held it ended
)

// Bounds.
const (
	MinTTL = time.Second
	MaxTTL = 24 * time.Hour
	// MaxKeyLen bounds a resource key (bytes).
	MaxKeyLen = 200
	// MaxAgentLen bounds an agent id (bytes).
	MaxAgentLen = 200
)

// WorkflowID is the id of the workflow that holds key.
func WorkflowID(key string) string { return "lease:" + key }

// Input starts a lease workflow; Carried is the state continued as new.
type Input struct {
	ResourceKey string   `json:"resource_key"`
	Carried     *Carried `json:"carried,omitempty"`
}

// Carried is what a lease workflow hands its next run.
type Carried struct {
	Current *Lease   `json:"current,omitempty"`
	Version int64    `json:"version"`
	Queue   []Waiter `json:"queue,omitempty"`
}

// Result is how a lease workflow ended.
type Result struct {
	Last *Lease `json:"last,omitempty"`
}

// Lease is one holding of a key.
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
	// ReleasedAt and Reason are set once the lease has ended.
	ReleasedAt time.Time `json:"released_at,omitzero"`
	Reason     string    `json:"reason,omitempty"`
	// Version counts the workflow's changes; the store keeps the highest.
	Version int64 `json:"version"`
}

// AcquireRequest asks for a key.
type AcquireRequest struct {
	AgentID    string `json:"agent_id"`
	TTLSeconds int    `json:"ttl_seconds"`
}

// Conflict says who holds a key asked for and when it may be free.
type Conflict struct {
	Holder       string `json:"holder"`
	LeaseID      string `json:"lease_id"`
	RetryAfterMS int64  `json:"retry_after_ms"`
}

// AcquireResult is the lease taken, or the conflict. Queued is the
// waiter's place in the queue (1 is next) when a wait was queued.
type AcquireResult struct {
	Lease    *Lease    `json:"lease,omitempty"`
	Conflict *Conflict `json:"conflict,omitempty"`
	Queued   int       `json:"queued,omitempty"`
}

// WaitRequest asks for a key for a workflow that can wait for it.
type WaitRequest struct {
	AgentID    string `json:"agent_id"`
	TTLSeconds int    `json:"ttl_seconds"`
	// WorkflowID and Signal are where the grant goes: the lease workflow
	// signals WorkflowID with Signal and a Grant once the key is the
	// waiter's.
	WorkflowID string `json:"workflow_id"`
	Signal     string `json:"signal"`
}

// Waiter is one entry of a key's queue.
type Waiter = WaitRequest

// Grant is the signal a waiter gets with the key.
type Grant struct {
	Lease Lease `json:"lease"`
}

// LeaveRequest gives up AgentID's place in the queue and its lease. A
// leave that gives up anything is taken only signed with the decision
// key (Client.Leave signs it; At and Signature as an answer's, SignedAs):
// a raw Temporal update cannot free a key or drop a waiter.
type LeaveRequest struct {
	AgentID string `json:"agent_id"`
	// Reason is the lease's end when it held one; empty is ReasonReleased.
	Reason string `json:"reason,omitempty"`
	decision.Signed
}

// SignedAs is the answer a leave's signature covers
// (decision.SignedAs).
func (r LeaveRequest) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(UpdateLeave, r, r.AgentID, r.Reason)
}

// LeaveResult says what the agent gave up.
type LeaveResult struct {
	Left     bool   `json:"left,omitempty"`     // it was queued
	Released *Lease `json:"released,omitempty"` // the lease it held, ended
}

// RenewRequest is a holder's heartbeat with its new TTL.
type RenewRequest struct {
	LeaseID    string `json:"lease_id"`
	AgentID    string `json:"agent_id"`
	TTLSeconds int    `json:"ttl_seconds"`
}

// ReleaseRequest ends a lease. AgentID must be the holder's unless Admin.
// A release is taken only signed with the decision key (Client signs it;
// At and Signature as an answer's, SignedAs): a raw Temporal update can
// name the holder or an admin, but not free the key.
type ReleaseRequest struct {
	LeaseID string `json:"lease_id"`
	AgentID string `json:"agent_id"`
	Admin   bool   `json:"admin,omitempty"`
	// Reason is one of the Reason constants; empty is ReasonReleased.
	Reason string `json:"reason,omitempty"`
	decision.Signed
}

// SignedAs is the answer a release's signature covers
// (decision.SignedAs).
func (r ReleaseRequest) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(UpdateRelease, r, r.AgentID, r.Reason)
}

// Event kinds a Change carries (the mesh's lock events).
const (
	EventAcquired     = "lock.acquired"
	EventRenewed      = "lock.renewed"
	EventReleased     = "lock.released"
	EventAutoReleased = "lock.auto_released"
)

// Change is one change of a lease for the store and the mesh: the lease
// as it is now and the event to emit. Notify asks for an agent.chat
// message to the previous holder.
type Change struct {
	Lease  Lease  `json:"lease"`
	Event  string `json:"event"`
	Notify bool   `json:"notify,omitempty"`
	// EventID is unique per change (lease id and version), so a retried
	// activity writes it once.
	EventID string `json:"event_id"`
	// Take marks a new lease on a key the workflow had free: it is written
	// only if the store holds no active lease of the key.
	Take bool `json:"take,omitempty"`
}

// ChangeResult is what ActivityChanged answers: Held, when a Take found
// the key held directly in the store, is that lease, adopted by the
// workflow (its version raised, so the holder's next change comes here).
type ChangeResult struct {
	Held *Lease `json:"held,omitempty"`
}

// Error types of refused updates (temporal.ApplicationError types).
const (
	ErrNotHeld   = "LeaseNotHeld"   // no such active lease
	ErrNotHolder = "LeaseNotHolder" // the lease is another agent's
	ErrInvalid   = "LeaseInvalid"   // a request out of bounds
)

// CheckKey refuses a resource key that is empty, too long, not UTF-8 or
// holds a control character.
func CheckKey(key string) error { return checkName("resource_key", key, MaxKeyLen) }

// CheckAgent refuses a bad agent id as CheckKey does.
func CheckAgent(agent string) error { return checkName("agent_id", agent, MaxAgentLen) }

func checkName(field, v string, max int) error {
	switch {
	case v == "":
		return fmt.Errorf("%s: is required", field)
	case len(v) > max:
		return fmt.Errorf("%s: is longer than %d bytes", field, max)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s: is not valid UTF-8", field)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s: holds a control character", field)
		}
	}
	return nil
}

// CheckTTL refuses a TTL out of [MinTTL, MaxTTL].
func CheckTTL(field string, seconds int) error {
	if d := time.Duration(seconds) * time.Second; d < MinTTL || d > MaxTTL {
		return fmt.Errorf("%s: must be from %d to %d seconds", field, int(MinTTL.Seconds()), int(MaxTTL.Seconds()))
	}
	return nil
}

// NewLeaseID makes a lease id that names its key, so any worker routes a
// heartbeat or release to the key's workflow without a lookup.
func NewLeaseID(key, nonce string) string {
	return "L" + nonce + "." + base64.RawURLEncoding.EncodeToString([]byte(key))
}

// KeyOf is the resource key a lease id names.
func KeyOf(leaseID string) (string, error) {
	_, enc, ok := strings.Cut(leaseID, ".")
	if !ok || !strings.HasPrefix(leaseID, "L") {
		return "", fmt.Errorf("lease id %q: not a lease id", leaseID)
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", fmt.Errorf("lease id %q: not a lease id", leaseID)
	}
	if err := CheckKey(string(b)); err != nil {
		return "", fmt.Errorf("lease id %q: %w", leaseID, err)
	}
	return string(b), nil
}

// RefusedError is a request the lease workflow refused: Type is ErrNotHeld,
// ErrNotHolder or ErrInvalid.
type RefusedError struct {
	Type    string
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// ActivitySweep is the local activity that ends the leases due (SweepRequest
// in, SweepResult out).
const ActivitySweep = "LeaseSweep"

// SweepRequest ends up to Limit direct leases whose expiry is at or before
// Cutoff. With Linger, the sweep stays up to that long to end the leases
// expiring within SweepGap of the last one, each at its expiry, without a
// timer and a workflow task each (1,000 leases taken in a few seconds
// expire as close together).
type SweepRequest struct {
	Cutoff time.Time     `json:"cutoff"`
	Limit  int           `json:"limit"`
	Linger time.Duration `json:"linger,omitempty"`
}

// SweepResult is how many leases a sweep ended, whether more are due, and
// the earliest expiry left (zero when no direct lease is active).
type SweepResult struct {
	Expired int       `json:"expired"`
	More    bool      `json:"more,omitempty"`
	Next    time.Time `json:"next,omitzero"`
	// At is the sweep's clock as it answered: a lingering sweep ends
	// after the workflow task's time, and the next timer counts from At.
	At time.Time `json:"at,omitzero"`
}

// Sweeper bounds.
const (
	// SweepBatch bounds the leases one sweep ends in one transaction.
	SweepBatch = 500
	// SweepLinger bounds the time one sweep stays for leases about to
	// expire, and SweepGap is how close the next must be.
	SweepLinger = 5 * time.Second
	SweepGap    = 250 * time.Millisecond
)
