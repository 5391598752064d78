package activities

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestErrorLogRotates(t *testing.T) {
	s := newStore(t, StoreOptions{ErrorLogMax: 4 << 10})
	raw := strings.Repeat("r", 900)
	const n = 40 // about 36 KiB: rotated several times over
	for i := range n {
		if err := s.AppendError(ErrorEntry{Source: "http", Reason: fmt.Sprintf("entry %d", i), Raw: raw}); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if err := s.FlushErrors(); err != nil {
			t.Fatalf("flushing entry %d: %v", i, err)
		}
	}
	files, err := filepath.Glob(filepath.Join(s.Root(), "errors.jsonl*"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 4<<10 {
			t.Errorf("%s is %d bytes, over the 4 KiB limit", filepath.Base(f), st.Size())
		}
	}
	if want := []string{"errors.jsonl", "errors.jsonl.1", "errors.jsonl.2"}; !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	got, err := s.Errors()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= n || got[len(got)-1].Reason != fmt.Sprintf("entry %d", n-1) {
		t.Fatalf("%d entries kept, the last %+v; want the newest ones, not all %d", len(got), got[len(got)-1].Reason, n)
	}
	for i := 1; i < len(got); i++ {
		var a, b int
		fmt.Sscanf(got[i-1].Reason, "entry %d", &a)
		fmt.Sscanf(got[i].Reason, "entry %d", &b)
		if b != a+1 {
			t.Fatalf("entries out of order or missing: %q then %q", got[i-1].Reason, got[i].Reason)
		}
	}
}

// A writer that cannot go on (here: held up on the log's lock, as by a
// hung disk) costs AppendError nothing: entries queue, then are dropped.
func TestErrorLogNeverBlocks(t *testing.T) {
	s := newStore(t, StoreOptions{})
	// The writer holds at most one batch and the queue: the rest drop.
	const sent = 4 * errorQueue
	s.errMu.Lock()
	done := make(chan int)
	go func() {
		dropped := 0
		for i := range sent {
			if err := s.AppendError(ErrorEntry{Source: "http", Reason: fmt.Sprintf("entry %d", i)}); errors.Is(err, ErrErrorLogFull) {
				dropped++
			}
		}
		done <- dropped
	}()
	var dropped int
	select {
	case dropped = <-done:
	case <-time.After(10 * time.Second):
		s.errMu.Unlock()
		t.Fatal("AppendError blocked on a stuck writer")
	}
	s.errMu.Unlock()
	if dropped < sent-2*errorQueue-1 || dropped == sent {
		t.Errorf("%d of %d entries dropped, want those beyond the queue of %d and the batch being written", dropped, sent, errorQueue)
	}
	got, err := s.Errors()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != sent-dropped {
		t.Errorf("%d entries written, want the %d queued", len(got), sent-dropped)
	}
}
