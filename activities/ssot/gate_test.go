package ssot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestGateInsertOncePerRun(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		g := GateRow{GateID: "gate_a", Kind: "signal", RunID: "run-1", AgentID: "bot", ProjectID: "p", Gated: true,
			Status: "pending", Model: "m", InputTokens: 10, OutputTokens: 5, ReportedUSD: 0.5, CostUSD: 0.4,
			ReceivedAt: at, Reasons: []string{"declared"}, Body: []byte(`{"a":1}`)}
		// Racing posts of one run store one row; every caller sees it.
		var wg sync.WaitGroup
		var mu sync.Mutex
		wrote := 0
		other := openStore(t, u)
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, gi := s, g
				if i%2 == 1 {
					db = other
				}
				gi.GateID = fmt.Sprintf("gate_%d", i%2)
				stored, ok, err := db.InsertGate(ctx, gi)
				if err != nil {
					t.Error(err)
					return
				}
				if stored.RunID != "run-1" {
					t.Errorf("stored %+v", stored)
				}
				mu.Lock()
				if ok {
					wrote++
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		if wrote != 1 {
			t.Fatalf("%d inserts wrote, want 1", wrote)
		}
		got, ok, err := s.GateByRun(ctx, "bot", "run-1")
		if err != nil || !ok || !got.Gated || got.Reasons[0] != "declared" || !got.ReceivedAt.Equal(at) {
			t.Fatalf("%+v %v %v", got, ok, err)
		}
		if err := s.ResolveGate(ctx, got.GateID, "approved", "ops", at.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		appendOutcome(t, s, got.GateID, "approve", "ops", at.Add(time.Minute))
		if err := s.ResolveGate(ctx, got.GateID, "rejected", "late", at.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		got, err = s.Gate(ctx, got.GateID)
		if err != nil || got.Status != "approved" || got.ResolvedBy != "ops" {
			t.Fatalf("%+v %v", got, err)
		}
		if _, err := s.Gate(ctx, "gate_none"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing gate: %v", err)
		}
		for i := 1; i <= 2; i++ {
			for range 2 { // a retried activity records once
				if err := s.AddGateAttempt(ctx, GateAttempt{GateID: got.GateID, Attempt: i, At: at, StatusCode: 500 * (2 - i), Error: "x"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if as, err := s.GateAttempts(ctx, got.GateID); err != nil || len(as) != 2 || as[0].StatusCode != 500 {
			t.Fatalf("%+v %v", as, err)
		}
	})
}

func TestGateListAndSpend(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		day := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		for i := range 7 {
			agent := []string{"a", "b"}[i%2]
			at := day.Add(time.Duration(i) * time.Minute)
			if i == 6 {
				at = day.AddDate(0, 0, -1) // yesterday: same month
			}
			g := GateRow{GateID: fmt.Sprintf("gate_%d", i), Kind: "signal", RunID: fmt.Sprintf("r%d", i),
				AgentID: agent, ProjectID: "p", Status: "approved", CostUSD: 1, InputTokens: 100, ReceivedAt: at}
			_, _, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), nil)
			if err != nil {
				t.Fatal(err)
			}
		}
		var all []string
		cursor := ""
		for {
			gs, next, err := s.GateList(ctx, GateFilter{Agent: "a"}, Page{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range gs {
				all = append(all, g.GateID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if fmt.Sprint(all) != "[gate_4 gate_2 gate_0 gate_6]" {
			t.Fatalf("listed %v", all)
		}
		for _, c := range []struct {
			q    SpendQuery
			want float64
		}{
			{SpendQuery{Agent: "a", Period: "day", At: day}, 3},
			{SpendQuery{Agent: "a", Period: "month", At: day}, 4},
			{SpendQuery{Project: "p", Period: "day", At: day}, 6},
			{SpendQuery{Agent: "b", Project: "p", Period: "month", At: day}, 3},
		} {
			sp, err := s.Spend(ctx, c.q)
			if err != nil || sp.USD != c.want {
				t.Errorf("%+v: %+v %v, want %v", c.q, sp, err, c.want)
			}
		}
	})
}

// signalEntry is the record of g's signal in its gate's chain, as the
// intake writes it beside the row.
func signalEntry(g GateRow) []Entry {
	body := fmt.Sprintf(`{"signal":{"run_id":%q},"gated":%t}`, g.RunID, g.Gated)
	return []Entry{{ID: g.GateID + "-signal", Kind: "signal", RecordedAt: g.ReceivedAt, Body: []byte(body)}}
}

// appendOutcome records the outcome of gate gateID's decision in its
// chain, as the gate workflow does.
func appendOutcome(t testing.TB, s *DB, gateID, option, by string, at time.Time) {
	t.Helper()
	body := fmt.Sprintf(`{"decision_id":%q,"option":%q,"by":%q,"at":%q}`, gateID+"-d1", option, by, at.UTC().Format(time.RFC3339Nano))
	if _, err := s.Append(context.Background(), GateSubject(gateID),
		[]Entry{{ID: gateID + "-d1-outcome", Kind: "decision", RecordedAt: at, Body: []byte(body)}}); err != nil {
		t.Fatal(err)
	}
}
