package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// bothSwaps runs f with the one-rename exchange and with the link scheme
// that stands in for it where the platform or file system lacks it.
func bothSwaps(t *testing.T, f func(t *testing.T)) {
	t.Run("Exchange", f)
	t.Run("Link", func(t *testing.T) {
		orig := exchange
		exchange = func(string, string) error { return errors.ErrUnsupported }
		t.Cleanup(func() { exchange = orig })
		f(t)
	})
}

// state is a task state whose size varies with n, across block sizes.
func state(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":%q}`, n, strings.Repeat("x", padLen(n))))
}

func padLen(n int) int { return n * 997 % 6000 }

func TestStoreTaskStateReusesFiles(t *testing.T) {
	bothSwaps(t, func(t *testing.T) {
		s := newStore(t, StoreOptions{})
		ctx := context.Background()
		task := "T-2026-020"
		dir := s.taskDir(task)
		stat := func(name string) os.FileInfo {
			t.Helper()
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			return fi
		}
		names := func() []string {
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range ents {
				out = append(out, e.Name())
			}
			return out
		}
		in := batch(task, 0, 2)
		in.Task = state(0)
		if _, err := s.Record(ctx, in); err != nil {
			t.Fatal(err)
		}
		want := []string{spareFile, "index.jsonl", taskFile}
		if got := names(); !slices.Equal(got, want) {
			t.Fatalf("files after the first write = %v, want %v", got, want)
		}
		index, cur, spare := stat("index.jsonl"), stat(taskFile), stat(spareFile)

		for i := 1; i <= 30; i++ {
			in := batch(task, 2*i, 2*i+2)
			in.Task = state(i)
			if _, err := s.Record(ctx, in); err != nil {
				t.Fatal(err)
			}
			if got := names(); !slices.Equal(got, want) {
				t.Fatalf("files after write %d = %v, want %v", i, got, want)
			}
			// The two files of the state swap names at every write.
			newCur, newSpare := stat(taskFile), stat(spareFile)
			if !os.SameFile(newCur, spare) || !os.SameFile(newSpare, cur) || !os.SameFile(stat("index.jsonl"), index) {
				t.Fatalf("write %d made a file: task.json and its spare are not the previous two", i)
			}
			cur, spare = newCur, newSpare
			if got, err := s.Task(task); err != nil || !sameJSON(got, state(i)) {
				t.Fatalf("state after write %d = %.40s…, %v", i, got, err)
			}
		}
		// An unchanged state is not written again.
		if _, err := s.Record(ctx, RecordInput{TaskID: task, Task: state(30)}); err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(stat(taskFile), cur) {
			t.Error("an unchanged state was written")
		}
	})
}

func TestStoreTaskConcurrentReader(t *testing.T) {
	bothSwaps(t, func(t *testing.T) {
		s := newStore(t, StoreOptions{})
		ctx := context.Background()
		task := "T-2026-021"
		if _, err := s.Record(ctx, RecordInput{TaskID: task, Task: state(0)}); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		reads := 0
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				raw, err := s.Task(task)
				var st struct {
					N   int    `json:"n"`
					Pad string `json:"pad"`
				}
				if err == nil {
					err = json.Unmarshal(raw, &st)
				}
				if err == nil && len(st.Pad) != padLen(st.N) {
					err = fmt.Errorf("state %d with a pad of %d bytes, want %d", st.N, len(st.Pad), padLen(st.N))
				}
				if err != nil {
					t.Errorf("read %d while writing: %v", reads, err)
					return
				}
				reads++
			}
		})
		for i := 1; i <= 200; i++ {
			if _, err := s.Record(ctx, RecordInput{TaskID: task, Task: state(i)}); err != nil {
				t.Error(err)
				break
			}
		}
		close(done)
		wg.Wait()
		if reads == 0 {
			t.Error("the reader never read")
		}
	})
}

// TestStoreTaskStateWithoutLinks covers a file system with neither
// RENAME_EXCHANGE nor hard links (FAT, some network mounts): every state
// still replaces task.json whole, with a plain rename.
func TestStoreTaskStateWithoutLinks(t *testing.T) {
	origExchange, origLink := exchange, link
	exchange = func(string, string) error { return errors.ErrUnsupported }
	link = func(string, string) error { return &os.LinkError{Op: "link", Err: errors.ErrUnsupported} }
	t.Cleanup(func() { exchange, link = origExchange, origLink })
	s := newStore(t, StoreOptions{})
	ctx := context.Background()
	task := "T-2026-023"
	for n := range 12 {
		if _, err := s.Record(ctx, RecordInput{TaskID: task, Task: state(n)}); err != nil {
			t.Fatalf("write %d: %v", n, err)
		}
		raw, err := s.Task(task)
		if err != nil {
			t.Fatalf("read %d: %v", n, err)
		}
		var got struct{ N int }
		if err := json.Unmarshal(raw, &got); err != nil || got.N != n {
			t.Fatalf("after write %d task.json holds %d (%v)", n, got.N, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.taskDir(task), prevFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", prevFile, err)
	}
}
