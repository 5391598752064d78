package ssot

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

func TestFleetHosts(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		a := Host{Host: "host-a", Slots: 2, Runs: json.RawMessage(`{"running":[]}`), StartedAt: t0, SeenAt: t0}
		b := Host{Host: "host-b", Slots: 4, Runs: json.RawMessage(`{"running":[{"task_id":"T-2026-001"}]}`), StartedAt: t0, SeenAt: t0.Add(time.Minute)}
		for _, h := range []Host{a, b} {
			if err := s.SaveHost(ctx, h); err != nil {
				t.Fatal(err)
			}
		}
		// A later write of a host replaces its row.
		a.Slots, a.SeenAt = 3, t0.Add(2*time.Minute)
		if err := s.SaveHost(ctx, a); err != nil {
			t.Fatal(err)
		}
		hosts, err := s.Hosts(ctx, t0.Add(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(hosts) != 2 || hosts[0].Host != "host-a" || hosts[0].Slots != 3 || !hosts[0].SeenAt.Equal(a.SeenAt) ||
			hosts[1].Host != "host-b" || string(hosts[1].Runs) != string(b.Runs) {
			t.Fatalf("hosts = %+v", hosts)
		}
		// A host not seen since is left out.
		if hosts, err := s.Hosts(ctx, t0.Add(90*time.Second)); err != nil || len(hosts) != 1 || hosts[0].Host != "host-a" {
			t.Fatalf("recent hosts = %+v, %v", hosts, err)
		}
		if err := s.SaveHost(ctx, Host{Host: "", Runs: json.RawMessage(`{}`)}); err == nil {
			t.Fatal("a host without a name was kept")
		}
		if err := s.SaveHost(ctx, Host{Host: "host-c", Runs: json.RawMessage(`{`)}); err == nil {
			t.Fatal("a host with runs that are not JSON was kept")
		}
	})
}
