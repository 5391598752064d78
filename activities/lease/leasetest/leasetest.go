// Package leasetest fakes the way to the lease workflows
// (*workflows/lease.Client) in memory for the tests of the packages that
// take it: one holder a key and a queue behind it, as a key's lease
// workflow keeps them, and a record of every call.
package leasetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/amp/lease"
)

// Client is the fake. Its zero value is not ready: use New. Every method
// is safe for concurrent use.
type Client struct {
	// Now is the clock of the leases' times; nil is time.Now.
	Now func() time.Time
	// RetryAfterMS is what a conflict tells the asker to wait.
	RetryAfterMS int64

	mu    sync.Mutex
	byKey map[string]*lease.Lease
	queue map[string][]lease.WaitRequest
	n     int
	calls []string
	waits []lease.WaitRequest
}

// New returns a Client holding no lease, whose conflicts say to retry
// after 12 s.
func New() *Client {
	return &Client{RetryAfterMS: 12000, byKey: map[string]*lease.Lease{}, queue: map[string][]lease.WaitRequest{}}
}

// Hold makes l the lease of its key, as if its workflow held it.
func (c *Client) Hold(l lease.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l.State = lease.StateActive
	c.byKey[l.ResourceKey] = &l
}

// Held is a copy of the lease of key, nil when nobody holds it.
func (c *Client) Held(key string) *lease.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.byKey[key]; l != nil {
		cp := *l
		return &cp
	}
	return nil
}

// Calls lists every call made, oldest first, each as "acquire KEY AGENT",
// "queue KEY AGENT" (AcquireOrQueue), "renew LEASE AGENT", "release
// LEASE AGENT REASON" or "leave KEY AGENT REASON".
func (c *Client) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

// Called lists the arguments of the calls of op, as Calls writes them
// after op.
func (c *Client) Called(op string) []string {
	var out []string
	for _, call := range c.Calls() {
		if args, ok := strings.CutPrefix(call, op+" "); ok {
			out = append(out, args)
		}
	}
	return out
}

// Waits lists the requests AcquireOrQueue was given, oldest first.
func (c *Client) Waits() []lease.WaitRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]lease.WaitRequest(nil), c.waits...)
}

func (c *Client) call(op string, args ...string) {
	c.calls = append(c.calls, strings.TrimSpace(op+" "+strings.Join(args, " ")))
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// take gives key to agent, or says who holds it.
func (c *Client) take(key, agent string, ttl int) lease.AcquireResult {
	if l := c.byKey[key]; l != nil && l.AgentID != agent {
		return lease.AcquireResult{Conflict: &lease.Conflict{Holder: l.AgentID, LeaseID: l.LeaseID, RetryAfterMS: c.RetryAfterMS}}
	}
	now := c.now()
	l := &lease.Lease{LeaseID: lease.NewLeaseID(key, fmt.Sprint(c.n)), ResourceKey: key, AgentID: agent,
		State: lease.StateActive, TTLSeconds: ttl, AcquiredAt: now, LastHeartbeat: now,
		ExpiresAt: now.Add(time.Duration(ttl) * time.Second), AutoRelease: true}
	c.n++
	c.byKey[key] = l
	return lease.AcquireResult{Lease: l}
}

// Acquire takes a free key, or answers its holder.
func (c *Client) Acquire(_ context.Context, key string, req lease.AcquireRequest) (lease.AcquireResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.call("acquire", key, req.AgentID)
	return c.take(key, req.AgentID, req.TTLSeconds), nil
}

// AcquireOrQueue takes a free key, or queues the request behind its
// holder and answers the place in the queue.
func (c *Client) AcquireOrQueue(_ context.Context, key string, req lease.WaitRequest) (lease.AcquireResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.call("queue", key, req.AgentID)
	c.waits = append(c.waits, req)
	res := c.take(key, req.AgentID, req.TTLSeconds)
	if res.Conflict != nil {
		c.queue[key] = append(c.queue[key], req)
		res.Queued = len(c.queue[key])
	}
	return res, nil
}

// find is the lease leaseID, if agent holds it or is an admin.
func (c *Client) find(leaseID, agent string, admin bool) (*lease.Lease, error) {
	for _, l := range c.byKey {
		if l.LeaseID == leaseID {
			if !admin && l.AgentID != agent {
				return nil, &lease.RefusedError{Type: lease.ErrNotHolder, Message: "held by " + l.AgentID}
			}
			return l, nil
		}
	}
	return nil, &lease.RefusedError{Type: lease.ErrNotHeld, Message: "lease " + leaseID + " is not held"}
}

// Renew renews the holder's lease with its new TTL.
func (c *Client) Renew(_ context.Context, req lease.RenewRequest) (lease.Lease, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.call("renew", req.LeaseID, req.AgentID)
	l, err := c.find(req.LeaseID, req.AgentID, false)
	if err != nil {
		return lease.Lease{}, err
	}
	now := c.now()
	l.TTLSeconds, l.LastHeartbeat, l.ExpiresAt = req.TTLSeconds, now, now.Add(time.Duration(req.TTLSeconds)*time.Second)
	return *l, nil
}

// Release ends the lease, its holder's or, for an admin, anyone's.
func (c *Client) Release(_ context.Context, req lease.ReleaseRequest) (lease.Lease, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.call("release", req.LeaseID, req.AgentID, req.Reason)
	l, err := c.find(req.LeaseID, req.AgentID, req.Admin)
	if err != nil {
		return lease.Lease{}, err
	}
	return c.end(l, req.Reason), nil
}

// Leave drops the agent from the key's queue and ends the lease it holds.
func (c *Client) Leave(_ context.Context, key string, req lease.LeaveRequest) (lease.LeaveResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.call("leave", key, req.AgentID, req.Reason)
	var res lease.LeaveResult
	q := c.queue[key]
	for i, w := range q {
		if w.AgentID == req.AgentID {
			c.queue[key], res.Left = append(q[:i:i], q[i+1:]...), true
			break
		}
	}
	if l := c.byKey[key]; l != nil && l.AgentID == req.AgentID {
		ended := c.end(l, req.Reason)
		res.Released = &ended
	}
	return res, nil
}

// end ends l with reason (empty is released) and frees its key.
func (c *Client) end(l *lease.Lease, reason string) lease.Lease {
	if reason == "" {
		reason = lease.ReasonReleased
	}
	delete(c.byKey, l.ResourceKey)
	l.State, l.Reason, l.ReleasedAt = lease.StateReleased, reason, c.now()
	return *l
}
