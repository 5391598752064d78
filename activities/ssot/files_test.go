package ssot

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

func TestFiles(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		if _, err := s.File(ctx, "T-2026-001", "diffs/a.diff"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("File before PutFile: err = %v, want ErrNotFound", err)
		}
		bin := []byte("diff --git a/x b/x\n\x00\xff binary\n")
		if err := s.PutFile(ctx, "T-2026-001", "diffs/a.diff", bin); err != nil {
			t.Fatal(err)
		}
		if err := s.PutFile(ctx, "T-2026-001", "ci/abc.log", []byte("first")); err != nil {
			t.Fatal(err)
		}
		if err := s.PutFile(ctx, "T-2026-001", "ci/abc.log", []byte("second")); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string][]byte{"diffs/a.diff": bin, "ci/abc.log": []byte("second")} {
			got, err := s.File(ctx, "T-2026-001", name)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("File(%s) = %q, %v; want %q", name, got, err, want)
			}
		}
		if _, err := s.File(ctx, "T-2026-002", "diffs/a.diff"); !errors.Is(err, ErrNotFound) {
			t.Errorf("File of another task: err = %v, want ErrNotFound", err)
		}
		var inv *InvalidError
		if err := s.PutFile(ctx, "T-2026-001", "", nil); !errors.As(err, &inv) || inv.Field != "name" {
			t.Errorf("PutFile without a name: err = %v, want an InvalidError on name", err)
		}
		if err := s.PutFile(ctx, "T-2026-001", "big", make([]byte, MaxFileSize+1)); !errors.As(err, &inv) || inv.Field != "data" {
			t.Errorf("PutFile over MaxFileSize: err = %v, want an InvalidError on data", err)
		}
	})
}
