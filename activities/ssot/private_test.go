package ssot

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSQLiteFilesPrivate: the SSOT's database and its journals are the
// owner's only, a new one and one that was readable by all alike.
func TestSQLiteFilesPrivate(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.db")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "new", "ampflow.db"), old} {
		db, err := Open(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Head(context.Background(), "T-2026-001"); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{p, p + "-wal", p + "-shm"} {
			st, err := os.Stat(f)
			if err != nil {
				continue
			}
			if m := st.Mode().Perm(); m != 0o600 {
				t.Errorf("%s has mode %o, want 600", f, m)
			}
		}
		db.Close()
	}
}
