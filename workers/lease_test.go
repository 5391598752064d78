package workers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/repomesh"
	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/aof"
)

type heartbeats struct {
	workflows.Tasks
	err error
	got []string
}

func (h *heartbeats) Heartbeat(_ context.Context, id string, in task.HeartbeatInput) error {
	h.got = append(h.got, id+" "+in.Note)
	return h.err
}

type meshLog struct{ evs []ssot.MeshEvent }

func (m *meshLog) AppendEvents(_ context.Context, evs []ssot.MeshEvent) error {
	m.evs = append(m.evs, evs...)
	return nil
}

func TestHeartbeatProgress(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("NoteIsProgress", func(t *testing.T) {
		hb, mesh := &heartbeats{}, &meshLog{}
		p := progressTasks{Tasks: hb, mesh: mesh, log: log}
		if err := p.Heartbeat(context.Background(), "T-2026-001", task.HeartbeatInput{From: amp.RoleExecutor, Note: "tests pass, writing docs"}); err != nil {
			t.Fatal(err)
		}
		if err := p.Heartbeat(context.Background(), "T-2026-001", task.HeartbeatInput{From: amp.RoleExecutor}); err != nil {
			t.Fatal(err)
		}
		if len(hb.got) != 2 || len(mesh.evs) != 1 {
			t.Fatalf("heartbeats %v, events %+v; want both heartbeats and one event (the one with a note)", hb.got, mesh.evs)
		}
		e := mesh.evs[0]
		var payload map[string]any
		if err := json.Unmarshal(e.Payload, &payload); err != nil {
			t.Fatal(err)
		}
		if e.Type != "task.progress" || e.TaskID != "T-2026-001" || payload["summary"] != "tests pass, writing docs" ||
			payload["agent_id"] != "executor" || payload["task_id"] != "T-2026-001" {
			t.Fatalf("event %+v payload %v", e, payload)
		}
	})
	t.Run("RefusedHeartbeatSaysNothing", func(t *testing.T) {
		hb, mesh := &heartbeats{err: errors.New("no such task")}, &meshLog{}
		p := progressTasks{Tasks: hb, mesh: mesh, log: log}
		if err := p.Heartbeat(context.Background(), "T-2026-404", task.HeartbeatInput{From: amp.RoleExecutor, Note: "x"}); err == nil {
			t.Fatal("a refused heartbeat was not refused")
		}
		if len(mesh.evs) != 0 {
			t.Fatalf("events %+v for a refused heartbeat", mesh.evs)
		}
	})
}

// TestSystemLeaseKeysReserved holds every lease key the system takes
// itself out of agents' reach: POST /v1/leases refuses them.
func TestSystemLeaseKeysReserved(t *testing.T) {
	for _, key := range []string{activities.BranchKey("/src/app", "main"), activities.BranchKey(strings.Repeat("r", 300), "main"),
		repomesh.ClaimKey("T-2026-001"), aof.LeaseKey("AOF-1")} {
		if repomesh.ReservedPrefix(key) == "" {
			t.Errorf("the system's lease key %s is not reserved", key)
		}
	}
}

type acks struct{ workflows.Tasks }

func (acks) Ack(context.Context, string, amp.Role) (task.SubmitResult, error) {
	return task.SubmitResult{}, nil
}

func TestAckRecordsDelivery(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mesh := &meshLog{}
	p := progressTasks{Tasks: acks{}, mesh: mesh, log: log}
	as := httpapi.WithCaller(context.Background(), httpapi.Caller{Name: "alice", Role: amp.RoleExecutor})
	const dispatch = "task_dispatch-T-2026-001-1700000000000"
	for _, c := range []struct {
		ctx   context.Context
		msgID string
	}{
		{as, dispatch},
		{context.Background(), "task_dispatch-T-2026-002-1700000000000"},                                     // no token
		{httpapi.WithCaller(context.Background(), httpapi.Caller{Open: true}), "task_dispatch-T-2026-003-1"}, // open API
		{as, "plan_approval-T-2026-004-1700000000000"},                                                       // not a delivery
	} {
		if _, err := p.Ack(c.ctx, c.msgID, amp.RoleExecutor); err != nil {
			t.Fatal(err)
		}
	}
	if len(mesh.evs) != 1 {
		t.Fatalf("events %+v, want alice's delivery of T-2026-001 alone", mesh.evs)
	}
	agent, role, ok := activities.DeliveryOf(mesh.evs[0])
	if !ok || agent != "alice" || role != amp.RoleExecutor || mesh.evs[0].TaskID != "T-2026-001" {
		t.Fatalf("delivery %+v", mesh.evs[0])
	}
}
