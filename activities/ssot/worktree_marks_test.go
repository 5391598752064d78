package ssot

import (
	"context"
	"testing"
	"time"
)

func TestWorktreeMarks(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		m := WorktreeMark{Path: "/data/worktrees/T-2026-008", TaskID: "T-2026-008", Repo: "/src/app", MarkedAt: at}
		if ok, err := s.WorktreeMarked(ctx, m.Path); err != nil || ok {
			t.Fatalf("WorktreeMarked before marking = %v, %v", ok, err)
		}
		for range 2 { // a retried mark keeps the first
			if err := s.MarkWorktree(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := s.WorktreeMarked(ctx, m.Path); err != nil || !ok {
			t.Fatalf("WorktreeMarked = %v, %v; want marked", ok, err)
		}
		got, err := s.MarkedWorktrees(ctx, 10)
		if err != nil || len(got) != 1 || got[0] != m {
			t.Fatalf("MarkedWorktrees = %+v, %v; want [%+v]", got, err, m)
		}
		if err := s.MarkWorktree(ctx, WorktreeMark{Path: "/x", TaskID: ""}); err == nil {
			t.Error("a bad task id was kept")
		}
		if err := s.UnmarkWorktree(ctx, m.Path); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.WorktreeMarked(ctx, m.Path); ok {
			t.Error("still marked after UnmarkWorktree")
		}
	})
}
