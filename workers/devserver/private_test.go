package devserver

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDataFilesPrivate: the dev server's data directory, lock, version
// file and Temporal database are their owner's only.
func TestDataFilesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	unlock, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := prepareStore(dir, "active", "default", 24*time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{dir: 0o700, filepath.Join(dir, DatabaseFile): 0o600, filepath.Join(dir, VersionFile): 0o600}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := want[filepath.Join(dir, e.Name())]; !ok && !e.IsDir() {
			want[filepath.Join(dir, e.Name())] = 0o600
		}
	}
	for p, w := range want {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != w {
			t.Errorf("%s has mode %o, want %o", p, m, w)
		}
	}
}
