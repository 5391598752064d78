package ssot

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestOriginClaim(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		issue := Origin{Source: "github", ExternalID: "owner/repo#7", URL: "https://github.com/owner/repo/issues/7", ClaimedAt: at}

		// Concurrent claims of one item: exactly one wins, all see its row.
		var wg sync.WaitGroup
		wins := make(chan bool, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				held, won, err := s.ClaimOrigin(ctx, issue)
				if err != nil {
					t.Error(err)
					return
				}
				if held.URL != issue.URL || held.TaskID != "" || !held.ClaimedAt.Equal(at) {
					t.Errorf("held %+v, want the claim %+v", held, issue)
				}
				wins <- won
			}()
		}
		wg.Wait()
		close(wins)
		n := 0
		for w := range wins {
			if w {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d claims won, want 1", n)
		}

		got, err := s.SetOriginTask(ctx, "github", "owner/repo#7", "T-2026-001")
		if err != nil || got != "T-2026-001" {
			t.Fatalf("SetOriginTask = %q, %v; want T-2026-001", got, err)
		}
		// A late claimant names another task: the first stays.
		if got, err := s.SetOriginTask(ctx, "github", "owner/repo#7", "T-2026-002"); err != nil || got != "T-2026-001" {
			t.Fatalf("second SetOriginTask = %q, %v; want T-2026-001", got, err)
		}
		if o, err := s.OriginOf(ctx, "T-2026-001"); err != nil || o.ExternalID != "owner/repo#7" {
			t.Fatalf("OriginOf = %+v, %v", o, err)
		}
		if _, err := s.OriginOf(ctx, "T-2026-002"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("OriginOf(T-2026-002) = %v, want ErrNotFound", err)
		}
		if _, _, err := s.ClaimOrigin(ctx, Origin{Source: "github"}); err == nil {
			t.Fatal("a claim without an external id was kept")
		}
	})
}

func TestTaskListBySource(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		for n := 1; n <= 3; n++ {
			st := taskState(n, 1, "dispatched")
			if _, err := s.Save(ctx, st.TaskID, nil, st); err != nil {
				t.Fatal(err)
			}
		}
		for id, src := range map[string]string{"T-2026-001": "github", "T-2026-002": "jira"} {
			if _, _, err := s.ClaimOrigin(ctx, Origin{Source: src, ExternalID: "x-" + id, TaskID: id, URL: "https://tracker/" + id}); err != nil {
				t.Fatal(err)
			}
		}
		rows, _, err := s.TaskList(ctx, TaskFilter{Source: "github"}, Page{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].TaskID != "T-2026-001" || rows[0].Origin == nil || rows[0].Origin.URL != "https://tracker/T-2026-001" {
			t.Fatalf("tasks from github = %+v, want T-2026-001 with its origin", rows)
		}
		all, _, err := s.TaskList(ctx, TaskFilter{}, Page{})
		if err != nil {
			t.Fatal(err)
		}
		origins := map[string]string{}
		for _, r := range all {
			if r.Origin != nil {
				origins[r.TaskID] = r.Origin.Source
			}
		}
		if len(all) != 3 || len(origins) != 2 || origins["T-2026-002"] != "jira" {
			t.Fatalf("all tasks = %d, origins %v; want 3 tasks, 2 with origins", len(all), origins)
		}
	})
}
