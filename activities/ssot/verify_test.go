package ssot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A row appended past the head with a hash that links it correctly, but
// without moving the head, was not written by the store.
func TestVerifyFindsRowBeyondHead(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		head, err := s.Append(ctx, "T-2026-001", []Entry{ent("m1", `{}`), ent("m2", `{}`)})
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"approved":true}`)
		r := Record{TaskID: "T-2026-001", Seq: 3, ID: "forged", Kind: "decision", RecordedAt: fromMicros(1), Body: body,
			BodyHash: hashHex(body), PrevHash: head.Head.Hash}
		r.Hash = rowHash(s.chainKey, r.PrevHash, r.TaskID, r.Seq, r.ID, r.Kind, 1, "", r.BodyHash)
		if _, err := s.db.Exec(s.rebind(`INSERT INTO records (task_id, seq, id, kind, recorded_at, digest, body, body_hash, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, '', ?, ?, ?, ?)`), r.TaskID, r.Seq, r.ID, r.Kind, 1, string(body), r.BodyHash, r.PrevHash, r.Hash); err != nil {
			t.Fatal(err)
		}
		var ce *ChainError
		if _, err := s.Verify(ctx, "T-2026-001"); !errors.As(err, &ce) || ce.Seq != 3 || ce.ID != "forged" || !strings.Contains(ce.Problem, "beyond the chain head #2") {
			t.Fatalf("got %v, want record #3 (forged) beyond the head", err)
		}
	})
}

// Verify runs while the task is written, as audit verify does beside
// running workers: rows committed after it read the head are no finding.
func TestVerifyWhileWriting(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		writer := openStore(t, u)
		if _, err := writer.Append(ctx, "T-2026-001", []Entry{ent("m0", `{}`)}); err != nil {
			t.Fatal(err)
		}
		const writes = 200
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			for i := 1; i <= writes; i++ {
				if _, err := writer.Append(ctx, "T-2026-001", []Entry{ent(fmt.Sprintf("m%d", i), `{}`)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		var failed error
		verified := 0
		for running := true; running && failed == nil; verified++ {
			select {
			case <-done:
				running = false
			default:
			}
			if _, err := s.Verify(ctx, "T-2026-001"); err != nil {
				failed = fmt.Errorf("verify %d, beside a writer: %w", verified, err)
			}
		}
		wg.Wait()
		if failed != nil {
			t.Fatal(failed)
		}
		if head, err := s.Verify(ctx, "T-2026-001"); err != nil || head.Seq != writes+1 {
			t.Fatalf("after the writes: %+v, %v", head, err)
		}
	})
}
