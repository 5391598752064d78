package ssot

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTaskMessages(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		var mu sync.Mutex
		var hooked []TaskMessage
		s.OnTaskMessage(func(_ context.Context, m TaskMessage) {
			mu.Lock()
			hooked = append(hooked, m)
			mu.Unlock()
		})
		at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		say, err := s.AddTaskMessage(ctx, TaskMessage{TaskID: "T-2026-001", Kind: TaskMessageSay, Sender: "ops", Text: "use the v2 API", CreatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		stop, err := s.AddTaskMessage(ctx, TaskMessage{TaskID: "T-2026-001", Kind: TaskMessageInterrupt, Sender: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddTaskMessage(ctx, TaskMessage{TaskID: "T-2026-002", Kind: TaskMessageSay, Sender: "planner", Text: "other task"}); err != nil {
			t.Fatal(err)
		}
		if say.ID == 0 || stop.ID <= say.ID || !say.CreatedAt.Equal(at) {
			t.Fatalf("ids %d, %d; created %s", say.ID, stop.ID, say.CreatedAt)
		}
		if last, err := s.LastTaskMessage(ctx, "T-2026-001", TaskMessageInterrupt); err != nil || last != stop.ID {
			t.Fatalf("LastTaskMessage = %d, %v; want %d", last, err, stop.ID)
		}
		if last, err := s.LastTaskMessage(ctx, "T-2026-009", TaskMessageInterrupt); err != nil || last != 0 {
			t.Fatalf("LastTaskMessage of no task = %d, %v", last, err)
		}
		und, err := s.UndeliveredTaskMessages(ctx, "T-2026-001", TaskMessageSay, 0)
		if err != nil || len(und) != 1 || und[0].Text != "use the v2 API" || und[0].Delivered() {
			t.Fatalf("undelivered = %+v, %v", und, err)
		}
		if und, _ := s.UndeliveredTaskMessages(ctx, "T-2026-001", TaskMessageInterrupt, stop.ID); len(und) != 0 {
			t.Fatalf("an interrupt at or below the floor: %+v", und)
		}

		// Two runs race for the message: one marks it.
		got, won, err := s.DeliverTaskMessage(ctx, say.ID, "m1/executor", at.Add(time.Minute))
		if err != nil || !won || got.Run != "m1/executor" || !got.DeliveredAt.Equal(at.Add(time.Minute)) {
			t.Fatalf("DeliverTaskMessage = %+v, %v, %v", got, won, err)
		}
		if got, won, err := s.DeliverTaskMessage(ctx, say.ID, "m2/executor", at.Add(2*time.Minute)); err != nil || won || got.Run != "m1/executor" {
			t.Fatalf("second DeliverTaskMessage = %+v, %v, %v; want the first run's", got, won, err)
		}
		if _, _, err := s.DeliverTaskMessage(ctx, 9999, "m1/executor", at); !errors.Is(err, ErrNotFound) {
			t.Fatalf("DeliverTaskMessage(9999) = %v, want ErrNotFound", err)
		}
		if und, _ := s.UndeliveredTaskMessages(ctx, "T-2026-001", TaskMessageSay, 0); len(und) != 0 {
			t.Fatalf("a delivered message is still undelivered: %+v", und)
		}
		all, err := s.TaskMessages(ctx, "T-2026-001")
		if err != nil || len(all) != 2 || all[0].ID != say.ID || !all[0].Delivered() || all[1].Kind != TaskMessageInterrupt {
			t.Fatalf("TaskMessages = %+v, %v", all, err)
		}
		mu.Lock()
		if len(hooked) != 4 || hooked[3].ID != say.ID || !hooked[3].Delivered() || hooked[0].Delivered() {
			t.Errorf("hook saw %+v; want three sends and one delivery", hooked)
		}
		mu.Unlock()
	})
}

func TestTaskMessageRefused(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		for _, c := range []struct {
			m     TaskMessage
			field string
		}{
			{TaskMessage{Kind: TaskMessageSay, Sender: "ops", Text: "x"}, "task_id"},
			{TaskMessage{TaskID: "T-2026-001", Kind: TaskMessageSay, Text: "x"}, "sender"},
			{TaskMessage{TaskID: "T-2026-001", Kind: TaskMessageSay, Sender: "ops", Text: "  "}, "text"},
			{TaskMessage{TaskID: "T-2026-001", Kind: TaskMessageSay, Sender: "ops", Text: strings.Repeat("x", MaxTaskMessageText+1)}, "text"},
			{TaskMessage{TaskID: "T-2026-001", Kind: TaskMessageSay, Sender: "ops", Text: "\xff"}, "text"},
			{TaskMessage{TaskID: "T-2026-001", Kind: "shout", Sender: "ops", Text: "x"}, "kind"},
		} {
			_, err := s.AddTaskMessage(ctx, c.m)
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != c.field {
				t.Errorf("AddTaskMessage(%+v) = %v; want a problem with %s", c.m, err, c.field)
			}
		}
		if all, _ := s.TaskMessages(ctx, "T-2026-001"); len(all) != 0 {
			t.Fatalf("refused messages were kept: %+v", all)
		}
		for i := range MaxTaskMessages {
			if _, err := s.AddTaskMessage(ctx, TaskMessage{TaskID: "T-2026-003", Kind: TaskMessageInterrupt, Sender: "ops"}); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
		}
		if _, err := s.AddTaskMessage(ctx, TaskMessage{TaskID: "T-2026-003", Kind: TaskMessageInterrupt, Sender: "ops"}); err == nil {
			t.Fatalf("message %d of a task was kept", MaxTaskMessages+1)
		}
	})
}
