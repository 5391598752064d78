package ssot

import (
	"context"
	"errors"
	"testing"
)

// relink rewrites record id of task as someone with the database and not
// the key would: a new body, and every hash from it to the head computed
// again with key (nil: SHA-256 alone), the head moved to match.
func relink(t *testing.T, s *DB, key []byte, task, id, body string) {
	t.Helper()
	ctx := context.Background()
	recs, _, err := s.History(ctx, task, Page{Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for _, r := range recs {
		if r.ID == id {
			r.Body = []byte(body)
			r.BodyHash = hashHex(r.Body)
		}
		r.PrevHash = prev
		r.Hash = rowHash(key, prev, task, r.Seq, r.ID, r.Kind, micros(r.RecordedAt), r.Digest, r.BodyHash)
		if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE records SET body = ?, body_hash = ?, prev_hash = ?, hash = ? WHERE task_id = ? AND seq = ?`),
			string(r.Body), r.BodyHash, r.PrevHash, r.Hash, task, r.Seq); err != nil {
			t.Fatal(err)
		}
		prev = r.Hash
	}
	if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE chains SET hash = ? WHERE task_id = ?`), prev, task); err != nil {
		t.Fatal(err)
	}
}

// TestKeyedChain: a keyed store's records hold HMACs of the chain key. A
// record rewritten in the database with every hash after it computed
// again, by someone without the decision key, fails verification at that
// record; the same rewrite with the key verifies, which is what the key
// guards; and a store given another key verifies nothing.
func TestKeyedChain(t *testing.T) {
	decisionKey := []byte("0123456789abcdef0123456789abcdef")
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		s.KeyChain(decisionKey)
		if !s.Keyed() {
			t.Fatal("Keyed is false after KeyChain")
		}
		for _, task := range []string{"T-2026-001", "T-2026-002"} {
			if _, err := s.Append(ctx, task, []Entry{ent("m1-"+task, `{"n":1}`), ent("m2-"+task, `{"n":2}`), ent("m3-"+task, `{"n":3}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if head, err := s.Verify(ctx, "T-2026-001"); err != nil || head.Seq != 3 {
			t.Fatalf("Verify = %+v, %v before any rewrite", head, err)
		}

		relink(t, s, nil, "T-2026-001", "m2-T-2026-001", `{"n":2,"approved":true}`)
		var ce *ChainError
		if _, err := s.Verify(ctx, "T-2026-001"); !errors.As(err, &ce) || ce.Seq != 1 || ce.Problem != "fields were changed (hash differs)" {
			t.Errorf("Verify after a rewrite re-linked without the key = %v; want record #1 failing: no hash is the key's", err)
		}

		relink(t, s, ChainKey(decisionKey), "T-2026-002", "m2-T-2026-002", `{"n":2,"approved":true}`)
		if head, err := s.Verify(ctx, "T-2026-002"); err != nil || head.Seq != 3 {
			t.Errorf("Verify after a rewrite re-linked with the key = %+v, %v; the test's re-linking is not the store's", head, err)
		}

		other := openStore(t, u)
		other.KeyChain([]byte("another key, another key, another"))
		if _, err := other.Verify(ctx, "T-2026-002"); !errors.As(err, &ce) || ce.Seq != 1 {
			t.Errorf("Verify with another decision key = %v; want record #1 failing", err)
		}
	})
}
