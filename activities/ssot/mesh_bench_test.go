package ssot

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchEvents is how many events the mesh benchmarks store first.
const benchEvents = 100_000

// seedMesh stores n chat events among 50 agents (one in ten a broadcast,
// one in twenty mentioning another agent), each with a subject of 4 and a
// content of 20 words from a vocabulary of 5,000, in batches of 1,000 per
// transaction.
func seedMesh(b *testing.B, s *DB, n int) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	words := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for done := 0; done < n; {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for range min(1000, n-done) {
			from, to := fmt.Sprintf("agent-%d", rng.IntN(50)), fmt.Sprintf("agent-%d", rng.IntN(50))
			if rng.IntN(10) == 0 {
				to = Broadcast
			}
			var deliver []string
			if rng.IntN(20) == 0 {
				deliver = []string{fmt.Sprintf("agent-%d", rng.IntN(50))}
			}
			at = at.Add(time.Second)
			e := MeshEvent{ID: fmt.Sprintf("E%07d", done), Type: "agent.chat", Severity: "info", From: from, FromID: from,
				To: to, Subject: words(4), Content: words(20), TaskID: fmt.Sprintf("T-2026-%03d", rng.IntN(500)),
				CreatedAt: at, Payload: []byte(`{}`), Deliver: deliver}
			if _, err := s.appendEvent(ctx, tx, e); err != nil {
				b.Fatal(err)
			}
			done++
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMesh measures inbox and search reads on both engines with
// 100,000 events stored, reporting p50 and p99 per read:
//
//	AMPFLOW_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable \
//	  go test -run '^$' -bench BenchmarkMesh -benchtime 2000x ./activities/ssot/
func BenchmarkMesh(b *testing.B) {
	for _, e := range engines() {
		b.Run(e.name, func(b *testing.B) {
			s := openStore(b, e.url(b))
			t0 := time.Now()
			seedMesh(b, s, benchEvents)
			b.Logf("%s: stored %d events in %s", e.name, benchEvents, time.Since(t0).Round(time.Millisecond))
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(3, 4))
			agent := func() string { return fmt.Sprintf("agent-%d", rng.IntN(50)) }
			word := func() string { return fmt.Sprintf("w%dx", rng.IntN(5000)) }
			for _, c := range []struct {
				name string
				read func() (int, error)
			}{
				{"inbox", func() (int, error) {
					evs, _, err := s.MeshInbox(ctx, InboxQuery{Recipients: []string{agent()}, Broadcast: true, Desc: true}, Page{Limit: 50})
					return len(evs), err
				}},
				{"inbox-since", func() (int, error) {
					since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(benchEvents)) * time.Second)
					evs, _, err := s.MeshInbox(ctx, InboxQuery{Recipients: []string{agent()}, Since: since}, Page{Limit: 50})
					return len(evs), err
				}},
				{"search-keyword", func() (int, error) {
					evs, _, err := s.SearchEvents(ctx, SearchQuery{Q: word()}, Page{Limit: 50})
					return len(evs), err
				}},
				{"search-two-keywords-from", func() (int, error) {
					evs, _, err := s.SearchEvents(ctx, SearchQuery{From: agent(), Q: word() + " " + word()}, Page{Limit: 50})
					return len(evs), err
				}},
				{"search-keyword-as-agent", func() (int, error) {
					evs, _, err := s.SearchEvents(ctx, SearchQuery{Q: word(), Viewers: []string{agent()}}, Page{Limit: 50})
					return len(evs), err
				}},
				{"search-as-agent", func() (int, error) {
					evs, _, err := s.SearchEvents(ctx, SearchQuery{Viewers: []string{agent()}}, Page{Limit: 50})
					return len(evs), err
				}},
				{"search-from-to", func() (int, error) {
					evs, _, err := s.SearchEvents(ctx, SearchQuery{From: agent(), To: agent()}, Page{Limit: 50})
					return len(evs), err
				}},
			} {
				b.Run(c.name, func(b *testing.B) {
					ds := make([]time.Duration, 0, b.N)
					rows := 0
					b.ResetTimer()
					for range b.N {
						t := time.Now()
						n, err := c.read()
						if err != nil {
							b.Fatal(err)
						}
						ds = append(ds, time.Since(t))
						rows += n
					}
					b.StopTimer()
					b.ReportMetric(pct(ds, 50), "p50-ms")
					b.ReportMetric(pct(ds, 99), "p99-ms")
					b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
				})
			}
		})
	}
}

func pct(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(max(int(math.Ceil(p/100*float64(len(s))))-1, 0), len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}
