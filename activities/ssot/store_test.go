package ssot

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// engine opens fresh stores of one kind.
type engine struct {
	name string
	// open returns the URL of a new, empty store.
	url func(t testing.TB) string
}

// engines are SQLite always and PostgreSQL when AMPFLOW_TEST_POSTGRES
// names a server (postgres://user@host:port/db); each PostgreSQL store is
// a database of its own, dropped when the test ends.
func engines() []engine {
	return []engine{
		{EngineSQLite, func(t testing.TB) string { return filepath.Join(t.TempDir(), "ampflow.db") }},
		{EnginePostgres, postgresURL},
	}
}

func postgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("AMPFLOW_TEST_POSTGRES")
	if base == "" {
		t.Skip("AMPFLOW_TEST_POSTGRES is unset: no PostgreSQL server to test against (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES: %v", err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	rand.Read(b)
	name := "ampflow_ssot_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s on AMPFLOW_TEST_POSTGRES: %v", name, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Errorf("dropping %s: %v", name, err)
			return
		}
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// eachEngine runs f once per engine, on a fresh store.
func eachEngine(t *testing.T, f func(t *testing.T, s *DB, url string)) {
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			u := e.url(t)
			s := openStore(t, u)
			f(t, s, u)
		})
	}
}

func openStore(t testing.TB, u string) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ent(id, body string) Entry {
	return Entry{ID: id, Kind: "message", Body: json.RawMessage(body), RecordedAt: time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.UTC)}
}

func ids(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func TestAppendExactlyOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		res, err := s.Append(ctx, "T-2026-001", []Entry{ent("m1", `{"b":1,"a":"<x>"}`), ent("m2", `{"n":2}`)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Written != 2 || res.Kept != 0 || res.Head.Seq != 2 {
			t.Fatalf("first append: %+v", res)
		}
		// A retry, with keys in another order and other spacing, is kept.
		res, err = s.Append(ctx, "T-2026-001", []Entry{ent("m1", `{ "a":"<x>", "b":1 }`), ent("m3", `{"n":3}`)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Written != 1 || res.Kept != 1 || res.Head.Seq != 3 {
			t.Fatalf("retry: %+v", res)
		}
		// Another body under a stored id is refused, and nothing of the
		// batch is written.
		_, err = s.Append(ctx, "T-2026-001", []Entry{ent("m4", `{"n":4}`), ent("m2", `{"n":"changed"}`)})
		var ce *ConflictError
		if !errors.As(err, &ce) || ce.ID != "m2" || ce.Why != "body" {
			t.Fatalf("conflicting append: got %v, want a body conflict on m2", err)
		}
		if _, err := s.Get(ctx, "m4"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("m4 of the refused batch: %v, want not found", err)
		}
		// The same id under another task is a conflict too.
		if _, err := s.Append(ctx, "T-2026-002", []Entry{ent("m1", `{"a":"<x>","b":1}`)}); !errors.As(err, &ce) || ce.Why != "task" {
			t.Fatalf("id of another task: %v", err)
		}
		recs, next, err := s.History(ctx, "T-2026-001", Page{})
		if err != nil || next != "" {
			t.Fatal(err, next)
		}
		if got := strings.Join(ids(recs), ","); got != "m1,m2,m3" {
			t.Fatalf("history %s, want m1,m2,m3", got)
		}
		if string(recs[0].Body) != `{"a":"<x>","b":1}` {
			t.Fatalf("canonical body %s", recs[0].Body)
		}
		if want := time.Date(2026, 11, 23, 10, 0, 0, 123456000, time.UTC); !recs[0].RecordedAt.Equal(want) {
			t.Fatalf("recorded_at %s, want %s (microseconds kept)", recs[0].RecordedAt, want)
		}
		r, err := s.Get(ctx, "m3")
		if err != nil || r.Seq != 3 || r.TaskID != "T-2026-001" {
			t.Fatalf("Get m3: %+v %v", r, err)
		}
		if _, _, err := s.History(ctx, "T-2026-404", Page{}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("history of an unknown task: %v", err)
		}
	})
}

func TestAppendRefusesInvalid(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		for _, c := range []struct {
			task  string
			e     []Entry
			field string
		}{
			{"", []Entry{ent("a", `{}`)}, "task_id"},
			{"T-1", []Entry{ent("a\nb", `{}`)}, "entries[0].id"},
			{"T-1", []Entry{ent(strings.Repeat("x", MaxIDLen+1), `{}`)}, "entries[0].id"},
			{"T-1", []Entry{{ID: "a", Body: json.RawMessage(`{}`)}}, "entries[0].kind"},
			{"T-1", []Entry{ent("a", `{}`), ent("b", `{"x":`)}, "entries[1].body"},
			{"T-1", []Entry{ent("a", `{} {}`)}, "entries[0].body"},
			{"T-1", []Entry{ent("a", `{}`), ent("a", `{}`)}, "entries[1].id"},
		} {
			_, err := s.Append(ctx, c.task, c.e)
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Field != c.field {
				t.Errorf("append %q %v: got %v, want an error naming %s", c.task, c.e, err, c.field)
			}
		}
		if ts, _, err := s.Tasks(ctx, Page{}); err != nil || len(ts) != 0 {
			t.Fatalf("refused appends left tasks %v (%v)", ts, err)
		}
	})
}

func TestHistoryPages(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		var es []Entry
		for i := range 250 {
			es = append(es, ent(fmt.Sprintf("m%03d", i), fmt.Sprintf(`{"i":%d}`, i)))
		}
		if _, err := s.Append(ctx, "T-2026-001", es); err != nil {
			t.Fatal(err)
		}
		var got []string
		cursor, pages := "", 0
		for {
			recs, next, err := s.History(ctx, "T-2026-001", Page{Limit: 100, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			got = append(got, ids(recs)...)
			if next == "" {
				break
			}
			cursor = next
		}
		if pages != 3 || len(got) != 250 || got[0] != "m000" || got[249] != "m249" {
			t.Fatalf("%d pages, %d records (%s…%s)", pages, len(got), got[0], got[len(got)-1])
		}
		var ie *InvalidError
		if _, _, err := s.History(ctx, "T-2026-001", Page{Limit: MaxLimit + 1}); !errors.As(err, &ie) || ie.Field != "limit" {
			t.Fatalf("limit over the maximum: %v", err)
		}
		if _, _, err := s.History(ctx, "T-2026-001", Page{Cursor: "not a cursor!"}); !errors.As(err, &ie) || ie.Field != "cursor" {
			t.Fatalf("bad cursor: %v", err)
		}
	})
}

func TestVerifyFindsTampering(t *testing.T) {
	cases := []struct {
		name, sql, want string
		seq             int64
	}{
		{"Intact", "", "", 0},
		{"BodyEdited", `UPDATE records SET body = '{"i":99}' WHERE id = 'm2'`, "body was changed", 3},
		{"KindEdited", `UPDATE records SET kind = 'decision' WHERE id = 'm1'`, "hash differs", 2},
		{"BodyAndHashEdited", `UPDATE records SET body = '{"i":99}', body_hash = '` + hashHex([]byte(`{"i":99}`)) + `' WHERE id = 'm2'`, "hash differs", 3},
		{"MiddleDeleted", `DELETE FROM records WHERE id = 'm2'`, "missing", 3},
		{"LastDeleted", `DELETE FROM records WHERE id = 'm4'`, "missing", 5},
		{"Reordered", `UPDATE records SET seq = seq + 100 WHERE id = 'm0'`, "missing", 1},
	}
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					s := openStore(t, e.url(t))
					ctx := context.Background()
					for i := range 5 {
						if _, err := s.Append(ctx, "T-2026-001", []Entry{ent(fmt.Sprintf("m%d", i), fmt.Sprintf(`{"i":%d}`, i))}); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := s.Append(ctx, "T-2026-002", []Entry{ent("other", `{}`)}); err != nil {
						t.Fatal(err)
					}
					if c.sql != "" {
						if _, err := s.db.Exec(c.sql); err != nil {
							t.Fatal(err)
						}
					}
					head, err := s.Verify(ctx, "T-2026-001")
					if c.want == "" {
						if err != nil || head.Seq != 5 {
							t.Fatalf("intact chain: head %+v, %v", head, err)
						}
						return
					}
					var ce *ChainError
					if !errors.As(err, &ce) || !strings.Contains(ce.Problem, c.want) || ce.Seq != c.seq {
						t.Fatalf("got %v, want record #%d: …%s…", err, c.seq, c.want)
					}
					if _, err := s.Verify(ctx, "T-2026-002"); err != nil {
						t.Fatalf("the untouched task: %v", err)
					}
				})
			}
		})
	}
}

// TestConcurrentWriters appends to one task from two store handles, as
// two workers would, and from several goroutines each.
func TestConcurrentWriters(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		other := openStore(t, u)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w, db := range []*DB{s, other} {
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 10 {
						id := fmt.Sprintf("w%d-g%d-%d", w, g, i)
						// Every entry is sent twice, as a retried activity would.
						for range 2 {
							if _, err := db.Append(ctx, "T-2026-001", []Entry{ent(id, `{}`)}); err != nil {
								errs <- err
								return
							}
						}
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		head, err := s.Verify(ctx, "T-2026-001")
		if err != nil {
			t.Fatal(err)
		}
		if head.Seq != 80 {
			t.Fatalf("head #%d, want 80 records each stored once", head.Seq)
		}
	})
}

func TestReopenAndErrors(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		if _, err := s.Append(ctx, "T-2026-001", []Entry{ent("m1", `{}`)}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := s.AppendError(ctx, ErrorEntry{Source: "http", TaskID: "T-2026-001", Reason: fmt.Sprintf("r%d", i), Raw: "{"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.AppendError(ctx, ErrorEntry{Source: "http"}); err == nil {
			t.Fatal("an error entry without a reason was kept")
		}
		s.Close()
		s = openStore(t, u) // the migrations run again and change nothing
		if _, err := s.Verify(ctx, "T-2026-001"); err != nil {
			t.Fatal(err)
		}
		errs, next, err := s.Errors(ctx, Page{Limit: 2})
		if err != nil || len(errs) != 2 || next == "" || errs[0].Reason != "r0" {
			t.Fatalf("first page of errors: %+v %q %v", errs, next, err)
		}
		errs, next, err = s.Errors(ctx, Page{Limit: 2, Cursor: next})
		if err != nil || len(errs) != 1 || next != "" || errs[0].Reason != "r2" {
			t.Fatalf("second page of errors: %+v %q %v", errs, next, err)
		}
	})
}

func TestTasksListsHeadsWithoutRows(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		for _, id := range []string{"T-2026-003", "T-2026-001", "T-2026-002"} {
			if _, err := s.Append(ctx, id, []Entry{ent("m-"+id, `{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.db.Exec(`DELETE FROM records WHERE task_id = 'T-2026-002'`); err != nil {
			t.Fatal(err)
		}
		first, next, err := s.Tasks(ctx, Page{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		rest, last, err := s.Tasks(ctx, Page{Limit: 2, Cursor: next})
		if err != nil || last != "" {
			t.Fatal(err, last)
		}
		if got := strings.Join(append(first, rest...), ","); got != "T-2026-001,T-2026-002,T-2026-003" {
			t.Fatalf("tasks %s", got)
		}
		var ce *ChainError
		if _, err := s.Verify(ctx, "T-2026-002"); !errors.As(err, &ce) || ce.Seq != 1 {
			t.Fatalf("a chain whose rows are gone: %v", err)
		}
	})
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"a":[3,{"d":1,"c":2}]}`, `{"a":[3,{"c":2,"d":1}],"b":1}`},
		{` "x<y&z" `, `"x<y&z"`},
		{`1.50`, `1.50`},
		{`{"big":12345678901234567890}`, `{"big":12345678901234567890}`},
	} {
		got, err := Canonical([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `{`, `{} x`, `nul`} {
		if _, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) accepted", bad)
		}
	}
}

// BenchmarkAppend appends one record at a time to 50 tasks in turn, as
// the workflows' record activities do.
func BenchmarkAppend(b *testing.B) {
	for _, e := range engines() {
		b.Run(e.name, func(b *testing.B) {
			s := openStore(b, e.url(b))
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				task := fmt.Sprintf("T-2026-%03d", i%50)
				if _, err := s.Append(ctx, task, []Entry{ent(fmt.Sprintf("m%d", i), `{"type":"task_result","payload":{"status":"complete"}}`)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
