package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// taskState is task n at revision rev, started n minutes after t0, with
// one message in the executor's inbox and, for odd n, an open decision.
func taskState(n int, rev int64, status string) *TaskState {
	id := fmt.Sprintf("T-2026-%03d", n)
	st := &TaskState{TaskID: id, Rev: rev, Status: status, Risk: "low", Repo: "/r", StartedAt: t0.Add(time.Duration(n) * time.Minute),
		UpdatedAt: t0.Add(time.Hour), State: json.RawMessage(fmt.Sprintf(`{"rev":%d}`, rev)),
		Outbox: []OutboxMessage{{MsgID: fmt.Sprintf("d-%s-%d", id, rev), Role: "executor", Type: "task_dispatch",
			SentAt: t0.Add(time.Duration(n) * time.Second), Body: json.RawMessage(`{}`)}}}
	if n%2 == 1 {
		st.Pending = []PendingDecision{{ID: id + "-d1", Kind: "plan_approval", RaisedAt: t0.Add(time.Duration(n) * time.Second),
			ExpiresAt: t0.Add(24 * time.Hour), Body: json.RawMessage(`{"prompt":"approve?"}`)}}
	}
	return st
}

func TestSaveKeepsTheNewestState(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		if _, err := s.Save(ctx, "T-2026-001", []Entry{ent("m1", `{}`)}, taskState(1, 2, "dispatched")); err != nil {
			t.Fatal(err)
		}
		// A late retry of an older state is ignored, its records kept.
		old := taskState(1, 1, "awaiting_approval")
		old.Outbox = nil
		res, err := s.Save(ctx, "T-2026-001", []Entry{ent("m0", `{}`)}, old)
		if err != nil || res.Written != 1 {
			t.Fatalf("older state: %+v %v", res, err)
		}
		got, err := s.Task(ctx, "T-2026-001")
		if err != nil {
			t.Fatal(err)
		}
		if got.Rev != 2 || got.Status != "dispatched" || string(got.State) != `{"rev":2}` || len(got.Outbox) != 1 || len(got.Pending) != 1 {
			t.Fatalf("after an older state: %+v", got)
		}
		// A newer state replaces the outbox and the decisions.
		next := taskState(1, 3, "in_review")
		next.Outbox, next.Pending = nil, nil
		if _, err := s.Save(ctx, "T-2026-001", nil, next); err != nil {
			t.Fatal(err)
		}
		got, err = s.Task(ctx, "T-2026-001")
		if err != nil || got.Status != "in_review" || len(got.Outbox) != 0 || len(got.Pending) != 0 {
			t.Fatalf("after a newer state: %+v %v", got, err)
		}
		if in, _, err := s.Inbox(ctx, "executor", Page{}); err != nil || len(in) != 0 {
			t.Fatalf("inbox after the message left the outbox: %v %v", in, err)
		}
		if _, err := s.Task(ctx, "T-2026-404"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown task: %v", err)
		}
		var ie *InvalidError
		bad := taskState(2, 1, "")
		if _, err := s.Save(ctx, "T-2026-002", []Entry{ent("m2", `{}`)}, bad); !errors.As(err, &ie) || ie.Field != "state.status" {
			t.Fatalf("state without a status: %v", err)
		}
		if _, err := s.Get(ctx, "m2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the records of a refused save were kept: %v", err)
		}
	})
}

func TestReadListings(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		for n := 1; n <= 25; n++ {
			status := "dispatched"
			if n%5 == 0 {
				status = "done"
			}
			if _, err := s.Save(ctx, fmt.Sprintf("T-2026-%03d", n), nil, taskState(n, 1, status)); err != nil {
				t.Fatal(err)
			}
		}
		// Newest first, in pages.
		var all []string
		cursor := ""
		for {
			ts, next, err := s.TaskList(ctx, TaskFilter{}, Page{Limit: 10, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range ts {
				all = append(all, x.TaskID)
				if x.State != nil || x.Outbox != nil {
					t.Fatalf("a listing carries the whole state of %s", x.TaskID)
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if len(all) != 25 || all[0] != "T-2026-025" || all[24] != "T-2026-001" {
			t.Fatalf("task list %v", all)
		}
		done, _, err := s.TaskList(ctx, TaskFilter{Status: "done"}, Page{})
		if err != nil || len(done) != 5 || done[0].TaskID != "T-2026-025" {
			t.Fatalf("done tasks: %+v %v", done, err)
		}
		in, next, err := s.Inbox(ctx, "executor", Page{Limit: 20})
		if err != nil || len(in) != 20 || next == "" || in[0].TaskID != "T-2026-001" {
			t.Fatalf("inbox page 1: %d %q %v", len(in), next, err)
		}
		in, next, err = s.Inbox(ctx, "executor", Page{Limit: 20, Cursor: next})
		if err != nil || len(in) != 5 || next != "" || in[4].TaskID != "T-2026-025" {
			t.Fatalf("inbox page 2: %d %q %v", len(in), next, err)
		}
		if rv, _, err := s.Inbox(ctx, "reviewer", Page{}); err != nil || len(rv) != 0 {
			t.Fatalf("reviewer inbox: %v %v", rv, err)
		}
		ds, _, err := s.Pending(ctx, Page{})
		if err != nil || len(ds) != 13 || ds[0].Subject != "T-2026-001" || !ds[0].ExpiresAt.Equal(t0.Add(24*time.Hour)) {
			t.Fatalf("pending: %d %v", len(ds), err)
		}
		var ie *InvalidError
		if _, _, err := s.TaskList(ctx, TaskFilter{}, Page{Cursor: encodeCursor("x")}); !errors.As(err, &ie) || ie.Field != "cursor" {
			t.Fatalf("bad cursor: %v", err)
		}
	})
}

// BenchmarkReads reads the inbox, the open decisions and one history with
// 10,000 open tasks in the store: the reads every long-polling agent and
// every `pending` make.
func BenchmarkReads(b *testing.B) {
	const tasks = 10000
	for _, e := range engines() {
		b.Run(e.name, func(b *testing.B) {
			s := openStore(b, e.url(b))
			ctx := context.Background()
			for n := 1; n <= tasks; n++ {
				id := fmt.Sprintf("T-2026-%03d", n)
				if _, err := s.Save(ctx, id, []Entry{ent(id+"-m1", `{}`), ent(id+"-m2", `{}`)}, taskState(n, 1, "dispatched")); err != nil {
					b.Fatal(err)
				}
			}
			for _, r := range []struct {
				name string
				read func() error
			}{
				{"Inbox", func() error { _, _, err := s.Inbox(ctx, "executor", Page{}); return err }},
				{"Pending", func() error { _, _, err := s.Pending(ctx, Page{}); return err }},
				{"History", func() error { _, _, err := s.History(ctx, "T-2026-5000", Page{}); return err }},
				{"TaskList", func() error { _, _, err := s.TaskList(ctx, TaskFilter{Status: "dispatched"}, Page{}); return err }},
			} {
				b.Run(r.name, func(b *testing.B) {
					took := make([]time.Duration, 0, b.N)
					for range b.N {
						start := time.Now()
						if err := r.read(); err != nil {
							b.Fatal(err)
						}
						took = append(took, time.Since(start))
					}
					slices.Sort(took)
					b.ReportMetric(float64(took[len(took)*99/100])/float64(time.Millisecond), "p99-ms")
				})
			}
		})
	}
}

func TestKeyCursor(t *testing.T) {
	at, id, err := decodeKeyCursor(keyCursor(42, "T-2026-001/x"))
	if err != nil || at != 42 || id != "T-2026-001/x" {
		t.Fatalf("round trip: %d %q %v", at, id, err)
	}
	for _, bad := range []string{"", encodeCursor("42"), encodeCursor("x/y"), encodeCursor("42/")} {
		if _, _, err := decodeKeyCursor(bad); err == nil || !strings.Contains(err.Error(), "cursor") {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}

// A task's started_at is the one first written: a later revision that
// says otherwise (the workflow's clock after the client's) moves nothing,
// so a listing paged by it meets no task twice.
func TestSaveKeepsTheFirstStartedAt(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		first := taskState(1, 0, "awaiting_approval")
		if _, err := s.Save(ctx, "T-2026-001", []Entry{ent("m1", `{}`)}, first); err != nil {
			t.Fatal(err)
		}
		next := taskState(1, 1, "dispatched")
		next.StartedAt = first.StartedAt.Add(-time.Second)
		if _, err := s.Save(ctx, "T-2026-001", nil, next); err != nil {
			t.Fatal(err)
		}
		got, err := s.Task(ctx, "T-2026-001")
		if err != nil || got.Rev != 1 || !got.StartedAt.Equal(first.StartedAt) {
			t.Fatalf("task %+v %v, want rev 1 started at %s", got, err, first.StartedAt)
		}
	})
}
