package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestAOFSave(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 2, 9, 21, 0, 0, 0, time.UTC)
		task := func(rev int64, status string) *AOFTask {
			return &AOFTask{TaskID: "TASK-2026-02-09-057", Status: status, Rev: rev, CreatedAt: at, UpdatedAt: at.Add(time.Duration(rev) * time.Second),
				Body: json.RawMessage(fmt.Sprintf(`{"status":%q}`, status))}
		}
		ev := func(id, typ string) AOFEvent {
			return AOFEvent{ID: id, TaskID: "TASK-2026-02-09-057", Type: typ, Actor: "swe-backend", At: at, Payload: json.RawMessage(`{"reason":"x"}`)}
		}
		art := func(name string, rev int64, body string) AOFArtifact {
			return AOFArtifact{TaskID: "TASK-2026-02-09-057", Name: name, Rev: rev, Body: body}
		}
		first := AOFSave{Task: task(1, "ready"), Events: []AOFEvent{ev("e1", "task.created")}}
		for range 2 { // a retry changes nothing
			if err := s.SaveAOF(ctx, first); err != nil {
				t.Fatal(err)
			}
		}
		second := AOFSave{Task: task(3, "in_progress"), Events: []AOFEvent{ev("e2", "task.transitioned")},
			Artifacts: []AOFArtifact{art("run.json", 3, `{"status":"running"}`), art("run_result.json", 3, `{"outcome":"done"}`)}}
		if err := s.SaveAOF(ctx, second); err != nil {
			t.Fatal(err)
		}
		// A late retry of an older step keeps the newer state and artifacts.
		late := AOFSave{Task: task(2, "ready"), Artifacts: []AOFArtifact{art("run.json", 2, `{"status":"old"}`)}, Events: []AOFEvent{ev("e1", "task.created")}}
		if err := s.SaveAOF(ctx, late); err != nil {
			t.Fatal(err)
		}
		got, err := s.AOFTask(ctx, "TASK-2026-02-09-057")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "in_progress" || got.Rev != 3 || !got.CreatedAt.Equal(at) || string(got.Body) != `{"status":"in_progress"}` {
			t.Errorf("task %+v", got)
		}
		arts, err := s.AOFArtifacts(ctx, "TASK-2026-02-09-057")
		if err != nil {
			t.Fatal(err)
		}
		if len(arts) != 2 || arts[0].Name != "run.json" || arts[0].Body != `{"status":"running"}` || arts[1].Name != "run_result.json" {
			t.Errorf("artifacts %+v", arts)
		}
		// A new run drops the last result; an older delete does not.
		if err := s.SaveAOF(ctx, AOFSave{Artifacts: []AOFArtifact{{TaskID: "TASK-2026-02-09-057", Name: "run_result.json", Rev: 2, Deleted: true}}}); err != nil {
			t.Fatal(err)
		}
		if arts, _ := s.AOFArtifacts(ctx, "TASK-2026-02-09-057"); len(arts) != 2 {
			t.Errorf("an older delete removed an artifact: %+v", arts)
		}
		if err := s.SaveAOF(ctx, AOFSave{Artifacts: []AOFArtifact{{TaskID: "TASK-2026-02-09-057", Name: "run_result.json", Rev: 4, Deleted: true}}}); err != nil {
			t.Fatal(err)
		}
		if arts, _ := s.AOFArtifacts(ctx, "TASK-2026-02-09-057"); len(arts) != 1 {
			t.Errorf("artifacts after the delete: %+v", arts)
		}
		evs, next, err := s.AOFEvents(ctx, "TASK-2026-02-09-057", Page{})
		if err != nil || next != "" {
			t.Fatal(err, next)
		}
		if len(evs) != 2 || evs[0].ID != "e1" || evs[1].Type != "task.transitioned" || !evs[0].At.Equal(at) || string(evs[0].Payload) != `{"reason":"x"}` {
			t.Errorf("events %+v", evs)
		}
		// Events of no task (a message that named none) list with all.
		if err := s.SaveAOF(ctx, AOFSave{Events: []AOFEvent{{ID: "e3", Type: "protocol.message.rejected", Payload: json.RawMessage(`{"reason":"invalid_json"}`)}}}); err != nil {
			t.Fatal(err)
		}
		page, next, err := s.AOFEvents(ctx, "", Page{Limit: 2})
		if err != nil || len(page) != 2 || next == "" {
			t.Fatalf("first page %v next %q: %v", page, next, err)
		}
		rest, next, err := s.AOFEvents(ctx, "", Page{Limit: 2, Cursor: next})
		if err != nil || len(rest) != 1 || rest[0].ID != "e3" || next != "" {
			t.Errorf("second page %v next %q: %v", rest, next, err)
		}
		if _, err := s.AOFTask(ctx, "TASK-2026-02-09-999"); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing task: %v", err)
		}
		list, _, err := s.AOFTasks(ctx, "in_progress", Page{})
		if err != nil || len(list) != 1 {
			t.Errorf("in_progress tasks %v: %v", list, err)
		}
		if list, _, _ := s.AOFTasks(ctx, "done", Page{}); len(list) != 0 {
			t.Errorf("done tasks %v", list)
		}
		if err := s.SaveAOF(ctx, AOFSave{Events: []AOFEvent{{ID: "e4", Type: "x", Payload: json.RawMessage(`{`)}}}); err == nil {
			t.Error("an event with a payload that is not JSON was saved")
		}
	})
}

func TestNextAOFTaskID(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		taken := func(id string) (bool, error) { return id == "TASK-2026-11-23-002", nil }
		var mu sync.Mutex
		seen := map[string]bool{}
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				id, err := s.NextAOFTaskID(ctx, "2026-11-23", taken)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if seen[id] {
					t.Errorf("%s allocated twice", id)
				}
				seen[id] = true
			})
		}
		wg.Wait()
		for _, id := range []string{"TASK-2026-11-23-001", "TASK-2026-11-23-003", "TASK-2026-11-23-007"} {
			if !seen[id] {
				t.Errorf("%s not allocated: %v", id, seen)
			}
		}
		if seen["TASK-2026-11-23-002"] {
			t.Error("an id in use was allocated")
		}
		if id, err := s.NextAOFTaskID(ctx, "2026-11-24", nil); err != nil || id != "TASK-2026-11-24-001" {
			t.Errorf("a new day starts at 001: %s %v", id, err)
		}
		if _, err := s.NextAOFTaskID(ctx, "23/11/2026", nil); err == nil {
			t.Error("a day that is not YYYY-MM-DD was taken")
		}
	})
}
