package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/lease"
)

// MeshLeases keeps leases and their mesh events (*ssot.DB).
type MeshLeases interface {
	RecordLease(ctx context.Context, l ssot.MeshLease, events []ssot.MeshEvent) error
	TakeLease(ctx context.Context, l ssot.MeshLease, events []ssot.MeshEvent, adopt bool) (ssot.MeshLease, bool, error)
	CompareLease(ctx context.Context, l ssot.MeshLease, from int64, events []ssot.MeshEvent) (bool, error)
}

// Leases holds the lease workflow's side effects.
type Leases struct {
	Store MeshLeases
}

// LeaseChanged writes a lease change: the lease row, its lock event and,
// when the change ended a lease its holder did not release, an agent.chat
// message telling the holder. Event ids come from the change, so a retry
// writes nothing twice. Registered as lease.ActivityChanged.
//
// A new lease (ch.Take) is written only when no lease of its key is
// active in the store; a key held there directly (Branches) is adopted
// instead and answered as ChangeResult.Held, for the workflow to hold.
func (a *Leases) LeaseChanged(ctx context.Context, ch lease.Change) (lease.ChangeResult, error) {
	row, events, err := changeRow(ch)
	if err != nil {
		return lease.ChangeResult{}, err
	}
	if ch.Take {
		held, taken, err := a.Store.TakeLease(ctx, row, events, true)
		if err != nil {
			return lease.ChangeResult{}, fmt.Errorf("recording %s of lease %s: %w", ch.Event, ch.Lease.LeaseID, err)
		}
		if taken {
			return lease.ChangeResult{}, nil
		}
		l := leaseOf(held)
		return lease.ChangeResult{Held: &l}, nil
	}
	if err := a.Store.RecordLease(ctx, row, events); err != nil {
		return lease.ChangeResult{}, fmt.Errorf("recording %s of lease %s: %w", ch.Event, ch.Lease.LeaseID, err)
	}
	return lease.ChangeResult{}, nil
}

func leaseOf(m ssot.MeshLease) lease.Lease {
	return lease.Lease{LeaseID: m.LeaseID, ResourceKey: m.ResourceKey, AgentID: m.AgentID, State: m.State,
		TTLSeconds: m.TTLSeconds, AcquiredAt: m.AcquiredAt, ExpiresAt: m.ExpiresAt, LastHeartbeat: m.LastHeartbeat,
		AutoRelease: true, ReleasedAt: m.ReleasedAt, Reason: m.Reason, Version: m.Version}
}

// changeRow is a lease change as the store keeps it: the lease row and
// its mesh events.
func changeRow(ch lease.Change) (ssot.MeshLease, []ssot.MeshEvent, error) {
	l := ch.Lease
	row := ssot.MeshLease{LeaseID: l.LeaseID, ResourceKey: l.ResourceKey, AgentID: l.AgentID, State: l.State,
		TTLSeconds: l.TTLSeconds, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt, LastHeartbeat: l.LastHeartbeat,
		ReleasedAt: l.ReleasedAt, Reason: l.Reason, Version: l.Version}
	at := l.LastHeartbeat
	if !l.ReleasedAt.IsZero() {
		at = l.ReleasedAt
	}
	payload := map[string]any{"lock_id": l.LeaseID, "agent_id": l.AgentID, "resource_key": l.ResourceKey}
	severity := "info"
	switch ch.Event {
	case lease.EventAcquired:
		payload["ttl"] = l.TTLSeconds
		payload["expires_at"] = l.ExpiresAt
	case lease.EventRenewed:
		payload["new_ttl"] = l.TTLSeconds
		payload["expires_at"] = l.ExpiresAt
	case lease.EventReleased:
		payload["reason"] = l.Reason
	case lease.EventAutoReleased:
		payload["reason"] = l.Reason
		payload["last_heartbeat"] = l.LastHeartbeat
		severity = "warning"
	default:
		return ssot.MeshLease{}, nil, temporal.NewNonRetryableApplicationError("unknown lease event "+ch.Event, lease.ErrInvalid, nil)
	}
	subject := fmt.Sprintf("%s %s", ch.Event, l.ResourceKey)
	events := []ssot.MeshEvent{meshEvent(ch.EventID, ch.Event, severity, l.AgentID, subject, "", at, payload)}
	if ch.Notify {
		content := fmt.Sprintf("Your lease %s on %s was released (%s) at %s; last heartbeat %s. The resource is free for others.",
			l.LeaseID, l.ResourceKey, l.Reason, at.UTC().Format(time.RFC3339), l.LastHeartbeat.UTC().Format(time.RFC3339))
		events = append(events, meshEvent(ch.EventID+"-chat", "agent.chat", "warning", l.AgentID,
			"Lease released: "+l.ResourceKey, content, at, map[string]any{
				"metadata": map[string]any{"lock_id": l.LeaseID, "reason": l.Reason, "event_id": ch.EventID},
			}))
	}
	return row, events, nil
}

// meshEvent is a system event to one agent; payload gets the envelope's
// from, to, subject, content and timestamp.
func meshEvent(id, typ, severity, to, subject, content string, at time.Time, payload map[string]any) ssot.MeshEvent {
	payload["from"], payload["from_id"], payload["to"] = ssot.MeshSender, ssot.MeshSender, to
	payload["timestamp"] = at.UTC()
	if subject != "" {
		payload["subject"] = subject
	}
	if content != "" {
		payload["content"] = content
	}
	body, _ := json.Marshal(payload)
	return ssot.MeshEvent{ID: ssot.SystemEventPrefix + id, Type: typ, Severity: severity, From: ssot.MeshSender, FromID: ssot.MeshSender, To: to,
		Subject: subject, Content: content, CreatedAt: at, Payload: body}
}
