package ssot

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestMarksAndTaskStates(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		empty, err := s.Marks(ctx)
		if err != nil || len(empty.Heads)+len(empty.Tasks)+len(empty.Pending)+len(empty.Subjects) != 0 {
			t.Fatalf("marks of an empty store: %+v, %v", empty, err)
		}
		if _, err := s.Save(ctx, "T-2026-001", []Entry{ent("a1", `{}`), ent("a2", `{}`)}, taskState(1, 1, "awaiting_approval")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Save(ctx, "T-2026-002", []Entry{ent("b1", `{}`)}, taskState(2, 1, "dispatched")); err != nil {
			t.Fatal(err)
		}
		m, err := s.Marks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantHeads := map[string]int64{"T-2026-001": 2, "T-2026-002": 1}
		wantTasks := map[string]TaskMark{"T-2026-001": {1, "awaiting_approval"}, "T-2026-002": {1, "dispatched"}}
		wantPending := map[string]string{"T-2026-001-d1": "T-2026-001"}
		if !maps.Equal(m.Heads, wantHeads) || !maps.Equal(m.Tasks, wantTasks) || !maps.Equal(m.Pending, wantPending) {
			t.Fatalf("marks %+v; want heads %v, tasks %v, pending %v", m, wantHeads, wantTasks, wantPending)
		}
		// The decision is taken: a new state, a record, no open decision.
		next := taskState(1, 2, "dispatched")
		next.Pending = nil
		if _, err := s.Save(ctx, "T-2026-001", []Entry{ent("a3", `{}`)}, next); err != nil {
			t.Fatal(err)
		}
		if m, err = s.Marks(ctx); err != nil || m.Heads["T-2026-001"] != 3 || m.Tasks["T-2026-001"] != (TaskMark{2, "dispatched"}) || len(m.Pending) != 0 {
			t.Fatalf("marks after the decision: %+v, %v", m, err)
		}

		if err := s.SaveDecisions(ctx, "gate-1", 4, []PendingDecision{{ID: "gate-1-d1", Kind: "gate", RaisedAt: t0, Body: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		if m, err = s.Marks(ctx); err != nil || m.Subjects["gate-1"] != 4 || m.Pending["gate-1-d1"] != "gate-1" {
			t.Fatalf("marks after a gate's decision: %+v, %v", m, err)
		}

		for _, e := range []ErrorEntry{{Source: "api", TaskID: "T-2026-001", Reason: "bad ack"}, {Source: "api", Reason: "no task"}, {Source: "api", TaskID: "T-2026-002", Reason: "bad result", Raw: "{"}} {
			if err := s.AppendError(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if m, err = s.Marks(ctx); err != nil || m.Refusals != 3 {
			t.Fatalf("marks after 3 refusals: %d, %v", m.Refusals, err)
		}
		if _, err := s.AppendEvent(ctx, MeshEvent{ID: "E1", Type: "agent.chat", From: "codex", To: "claude", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordLease(ctx, MeshLease{LeaseID: "L1.eA", ResourceKey: "x", AgentID: "codex", State: "active", TTLSeconds: 60,
			AcquiredAt: t0, ExpiresAt: t0.Add(time.Minute), LastHeartbeat: t0, Version: 1},
			[]MeshEvent{{ID: "L1.eA-v1", Type: "lock.acquired", To: "codex", CreatedAt: t0}}); err != nil {
			t.Fatal(err)
		}
		if m2, err := s.Marks(ctx); err != nil || m2.Mesh <= m.Mesh || m2.Mesh == 0 {
			t.Fatalf("the mesh mark after a message and a lease: %d (before: %d), %v", m2.Mesh, m.Mesh, err)
		}
		if ids, err := s.RefusalsAfter(ctx, 1); err != nil || !slices.Equal(slices.Sorted(slices.Values(ids)), []string{"T-2026-002"}) {
			t.Fatalf("refusals after #1: %v, %v", ids, err)
		}
		if rs, err := s.TaskRefusals(ctx, "T-2026-002", 10); err != nil || len(rs) != 1 || rs[0].Reason != "bad result" || rs[0].Raw != "{" {
			t.Fatalf("refusals of T-2026-002: %+v, %v", rs, err)
		}

		states, err := s.TaskStates(ctx, []string{"T-2026-001", "T-2026-002", "T-2026-404"})
		if err != nil || len(states) != 2 || string(states["T-2026-001"]) != `{"rev":2}` {
			t.Fatalf("task states: %v, %v", states, err)
		}
		if none, err := s.TaskStates(ctx, nil); err != nil || len(none) != 0 {
			t.Fatalf("task states of no ids: %v, %v", none, err)
		}
		if _, err := s.TaskStates(ctx, make([]string, MaxLimit+1)); err == nil {
			t.Fatal("more ids than MaxLimit are read")
		}
	})
}
