package ssot

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Saves of many tasks at once share SQLite commits; one that conflicts
// is rolled back alone, records it wrote before the conflict included,
// and its batchmates are stored whole.
func TestGroupCommitIsolatesAFailedSave(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "ampflow.db"))
	if s.group == nil {
		t.Fatal("a SQLite store has no group writer")
	}
	ctx := context.Background()
	if _, err := s.Append(ctx, "T-2026-999", []Entry{ent("taken", `{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	const n = 48
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := fmt.Sprintf("T-2026-%03d", i+1)
			es := []Entry{ent(task+"-a", `{}`), ent(task+"-b", `{}`)}
			if i == n/2 {
				// Its first record is new, its second reuses an id.
				es = []Entry{ent(task+"-a", `{}`), ent("taken", `{"a":2}`)}
			}
			_, errs[i] = s.Append(ctx, task, es)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		task := fmt.Sprintf("T-2026-%03d", i+1)
		head, verr := s.Verify(ctx, task)
		if i == n/2 {
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.ID != "taken" {
				t.Errorf("%s: error %v, want a conflict on taken", task, err)
			}
			if (verr != nil && !errors.Is(verr, ErrNotFound)) || head.Seq != 0 {
				t.Errorf("%s: head #%d (%v), want nothing of the failed save stored", task, head.Seq, verr)
			}
			continue
		}
		if err != nil || verr != nil || head.Seq != 2 {
			t.Errorf("%s: error %v, head #%d (%v); want both records stored", task, err, head.Seq, verr)
		}
	}
}

// A save after Close is refused, not left waiting.
func TestGroupWriterClosed(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Append(context.Background(), "T-2026-001", []Entry{ent("a", `{}`)}); err == nil {
		t.Error("a save after Close was taken")
	}
}

// BenchmarkConcurrentSaves is sixteen tasks' workflows writing at once,
// as `ampflow bench` runs them.
func BenchmarkConcurrentSaves(b *testing.B) {
	for _, e := range engines() {
		b.Run(e.name, func(b *testing.B) {
			s := openStore(b, e.url(b))
			ctx := context.Background()
			b.SetParallelism(16)
			var next sync.Mutex
			i := 0
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					next.Lock()
					i++
					id := i
					next.Unlock()
					task := fmt.Sprintf("T-2026-%03d", id%50)
					if _, err := s.Append(ctx, task, []Entry{ent(fmt.Sprintf("m%d", id), `{"type":"task_result","payload":{"status":"complete"}}`)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// Every SQLite connection has the pragmas parseURL asks for: WAL, a sync
// on every commit and statement journals in memory.
func TestSQLitePragmas(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "ampflow.db"))
	ctx := context.Background()
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "temp_store": "2", "busy_timeout": "10000"} {
		var got string
		if err := s.db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}
