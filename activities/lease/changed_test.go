package lease

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/lease"
)

type leaseRecorder struct {
	rows   []ssot.MeshLease
	events []ssot.MeshEvent
}

func (r *leaseRecorder) RecordLease(_ context.Context, l ssot.MeshLease, evs []ssot.MeshEvent) error {
	r.rows = append(r.rows, l)
	r.events = append(r.events, evs...)
	return nil
}

func (r *leaseRecorder) TakeLease(ctx context.Context, l ssot.MeshLease, evs []ssot.MeshEvent, _ bool) (ssot.MeshLease, bool, error) {
	return l, true, r.RecordLease(ctx, l, evs)
}

func (r *leaseRecorder) CompareLease(ctx context.Context, l ssot.MeshLease, _ int64, evs []ssot.MeshEvent) (bool, error) {
	return true, r.RecordLease(ctx, l, evs)
}

func TestLeaseChanged(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	l := lease.Lease{LeaseID: "L1.eA", ResourceKey: "repo:app:main", AgentID: "alice", State: lease.StateActive,
		TTLSeconds: 30, AcquiredAt: at, LastHeartbeat: at, ExpiresAt: at.Add(30 * time.Second), Version: 1}
	ended := l
	ended.State, ended.Reason, ended.ReleasedAt, ended.Version = lease.StateExpired, lease.ReasonExpired, at.Add(30*time.Second), 2
	for _, c := range []struct {
		name   string
		change lease.Change
		want   []string // event types
		fields []string // in the lock event's payload
	}{
		{"Acquired", lease.Change{Lease: l, Event: lease.EventAcquired, EventID: "L1.eA-v1"},
			[]string{"lock.acquired"}, []string{`"lock_id":"L1.eA"`, `"ttl":30`, `"resource_key":"repo:app:main"`}},
		{"Renewed", lease.Change{Lease: l, Event: lease.EventRenewed, EventID: "L1.eA-v1"},
			[]string{"lock.renewed"}, []string{`"new_ttl":30`}},
		{"AutoReleased", lease.Change{Lease: ended, Event: lease.EventAutoReleased, Notify: true, EventID: "L1.eA-v2"},
			[]string{"lock.auto_released", "agent.chat"}, []string{`"last_heartbeat":"2026-11-23T10:00:00Z"`, `"reason":"expired"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &leaseRecorder{}
			if _, err := (&Leases{Store: rec}).LeaseChanged(context.Background(), c.change); err != nil {
				t.Fatal(err)
			}
			if len(rec.rows) != 1 || rec.rows[0].Version != c.change.Lease.Version || rec.rows[0].State != c.change.Lease.State {
				t.Fatalf("rows %+v", rec.rows)
			}
			var types []string
			for _, e := range rec.events {
				types = append(types, e.Type)
				if e.To != "alice" || e.From != ssot.MeshSender || !json.Valid(e.Payload) {
					t.Errorf("event %+v", e)
				}
			}
			if strings.Join(types, " ") != strings.Join(c.want, " ") {
				t.Fatalf("events %v, want %v", types, c.want)
			}
			for _, f := range c.fields {
				if !strings.Contains(string(rec.events[0].Payload), f) {
					t.Errorf("payload %s lacks %s", rec.events[0].Payload, f)
				}
			}
			if c.change.Notify && !strings.Contains(rec.events[1].Content, "released (expired)") {
				t.Errorf("the holder's message: %q", rec.events[1].Content)
			}
		})
	}
	if _, err := (&Leases{Store: &leaseRecorder{}}).LeaseChanged(context.Background(), lease.Change{Lease: l, Event: "lock.stolen"}); err == nil {
		t.Fatal("an unknown event was recorded")
	}
}
