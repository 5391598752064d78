package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// seedDecisions saves n open decisions over n/10 tasks.
func seedDecisions(b *testing.B, db *ssot.DB, n int) {
	for ti := 0; ti < n/10; ti++ {
		id := fmt.Sprintf("T-2026-%04d", ti)
		st := taskState(b, id, 1, task.StatusAwaitingAdmin, nil)
		for k := range 10 {
			d := planDecision(id, k)
			st.Pending = append(st.Pending, ssot.PendingDecision{ID: d.ID, Subject: id, Kind: string(d.Kind), RaisedAt: d.RaisedAt.Add(time.Duration(ti*10+k) * time.Millisecond), Body: mustJSON(b, d)})
		}
		if _, err := db.Save(context.Background(), id, nil, &st); err != nil {
			b.Fatal(err)
		}
	}
}

func servePage(b *testing.B, h http.Handler, path, want string, before ...func()) {
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1"
	b.ResetTimer()
	for b.Loop() {
		for _, f := range before {
			f()
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String()[:min(500, rec.Body.Len())])
		}
		b.SetBytes(int64(rec.Body.Len()))
	}
	b.StopTimer()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if n := strings.Count(rec.Body.String(), want); n == 0 {
		b.Fatalf("GET %s lacks %q", path, want)
	}
}

// BenchmarkDecisionsPage renders the decisions page with 1,000 open
// decisions, read from a SQLite store, as a live page refreshes it: the
// cards of decisions that did not change come from the card cache.
func BenchmarkDecisionsPage(b *testing.B) {
	db := openStore(b)
	seedDecisions(b, db, 1000)
	s := New(Options{Store: db, Actions: &fakeEngine{t: b, db: db}})
	servePage(b, s.Handler(), "/", `data-decision-id="T-2026-0099-d9"`)
}

// BenchmarkDecisionsPageCold is BenchmarkDecisionsPage with the card
// cache emptied before each render: every card decoded and rendered.
func BenchmarkDecisionsPageCold(b *testing.B) {
	db := openStore(b)
	seedDecisions(b, db, 1000)
	s := New(Options{Store: db, Actions: &fakeEngine{t: b, db: db}})
	h := s.Handler()
	req := httptest.NewRequest("GET", "/", nil)
	req.Host = "127.0.0.1"
	for b.Loop() {
		s.cards = newCardCache()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `data-decision-id="T-2026-0099-d9"`) {
			b.Fatalf("GET /: %d", rec.Code)
		}
		b.SetBytes(int64(rec.Body.Len()))
	}
}

// BenchmarkTaskPage renders a task page whose record holds 2,000
// records, the chain walked on each view (its verification not reused).
func BenchmarkTaskPage(b *testing.B) {
	db := openStore(b)
	seedTask(b, db, "T-2026-0001", 1998)
	s := New(Options{Store: db, Actions: &fakeEngine{t: b, db: db}})
	servePage(b, s.Handler(), "/tasks/T-2026-0001", `data-record-id="T-2026-0001-h1997"`,
		func() { s.verified = &verifyCache{m: map[string]verified{}} })
}

// BenchmarkFanOut sends one event to 100 open pages over HTTP: an
// operation is the time from publishing to the last page reading it.
func BenchmarkFanOut(b *testing.B) {
	db := openStore(b)
	s := New(Options{Store: db, Actions: &fakeEngine{t: b, db: db}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	const pages = 100
	var wg sync.WaitGroup
	got := make(chan struct{}, pages*4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{}, pages)
	for range pages {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "event: hello") {
					ready <- struct{}{}
				}
				if strings.HasPrefix(line, "event: task") {
					got <- struct{}{}
				}
			}
		}()
	}
	for range pages {
		<-ready
	}
	b.ResetTimer()
	for b.Loop() {
		s.hub.publish(EventTask, taskEvent{TaskID: "T-2026-0001", Status: "dispatched"})
		for range pages {
			<-got
		}
	}
	b.StopTimer()
	cancel()
	wg.Wait()
}

// BenchmarkMarks is the watcher's look at a store of 1,000 tasks with
// 1,000 open decisions, made every 300ms by each process.
func BenchmarkMarks(b *testing.B) {
	db := openStore(b)
	seedDecisions(b, db, 1000)
	for i := range 900 {
		id := fmt.Sprintf("T-2026-9%03d", i)
		st := taskState(b, id, 1, task.StatusDone, nil)
		if _, err := db.Save(context.Background(), id, nil, &st); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		m, err := db.Marks(context.Background())
		if err != nil || len(m.Tasks) != 1000 || len(m.Pending) != 1000 {
			b.Fatalf("marks: %d tasks, %d open decisions, %v", len(m.Tasks), len(m.Pending), err)
		}
	}
}
