package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countFsyncs counts every fsync the SSOT makes until the test ends.
func countFsyncs(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	orig := fsync
	fsync = func(f *os.File) error {
		n.Add(1)
		return orig(f)
	}
	t.Cleanup(func() { fsync = orig })
	return &n
}

func batch(task string, from, to int) RecordInput {
	in := RecordInput{TaskID: task}
	for i := from; i < to; i++ {
		in.Entries = append(in.Entries, entry(fmt.Sprintf("event-%s-%d", task, i), KindEvent, fmt.Sprintf(`{"n":%d,"text":"a <b> & c"}`, i)))
	}
	return in
}

func wantHistory(t *testing.T, s *Store, task string, n int) {
	t.Helper()
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("event-%s-%d", task, i))
	}
	if got := historyIDs(t, s, task); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("history = %v\nwant %v", got, want)
	}
}

func TestStoreRecordFsyncs(t *testing.T) {
	s := newStore(t, StoreOptions{})
	ctx := context.Background()
	syncs := countFsyncs(t)
	record := func(in RecordInput) int64 {
		t.Helper()
		before := syncs.Load()
		if _, err := s.Record(ctx, in); err != nil {
			t.Fatal(err)
		}
		return syncs.Load() - before
	}
	// The journal is created: it, the task's directory and tasks/.
	if n := record(batch("T-2026-001", 0, 2)); n != 3 {
		t.Errorf("first batch of a task: %d fsyncs, want 3", n)
	}
	in := batch("T-2026-001", 2, 6)
	in.Task = json.RawMessage(`{"status":"review"}`)
	if n := record(in); n != 1 {
		t.Errorf("batch of 4 records and the state: %d fsyncs, want 1", n)
	}
	if n := record(batch("T-2026-001", 0, 6)); n != 0 {
		t.Errorf("batch already kept: %d fsyncs, want 0", n)
	}
	wantHistory(t, s, "T-2026-001", 6)
}

func TestStorePowerCut(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "ssot")
	s, err := NewStore(root, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	task := "T-2026-009"
	for _, in := range []RecordInput{batch(task, 0, 3), batch(task, 3, 5)} {
		if _, err := s.Record(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	msgs := filepath.Join(root, "tasks", task, "messages")
	file := func(i int) string { return filepath.Join(msgs, fmt.Sprintf("event-%s-%d.json", task, i)) }
	lost, torn := file(1), file(3)
	orig := map[string][]byte{}
	for _, p := range []string{lost, torn} {
		if orig[p], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	// The files of kept records were never synced: one is gone, one empty.
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(torn, 0); err != nil {
		t.Fatal(err)
	}
	// A call cut before its journal line became durable left an empty file.
	unjournaled := file(5)
	if err := os.WriteFile(unjournaled, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// Readers in a new process take the records from the journal.
	s2, err := NewStore(root, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantHistory(t, s2, task, 5)
	for _, i := range []int{1, 3} {
		id := fmt.Sprintf("event-%s-%d", task, i)
		if r, err := s2.Get(id); err != nil || r.ID != id || !sameJSON(r.Body, json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"a <b> & c"}`, i))) {
			t.Errorf("Get(%s) = %+v, %v", id, r, err)
		}
	}

	// Its first write restores the files and drops the torn one it never kept.
	res, err := s2.Record(ctx, batch(task, 3, 7))
	if err != nil || res.Written != 2 {
		t.Fatalf("write after a power cut: %+v, %v", res, err)
	}
	for p, want := range orig {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s restored as %q, %v; want %q", filepath.Base(p), got, err, want)
		}
	}
	if r, err := readRecord(unjournaled); err != nil || !sameJSON(r.Body, json.RawMessage(`{"n":5,"text":"a <b> & c"}`)) {
		t.Errorf("record written again after its torn file: %+v, %v", r, err)
	}
	wantHistory(t, s2, task, 7)
	_, err = s2.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{entry(fmt.Sprintf("event-%s-1", task), KindEvent, `{"n":99}`)}})
	appErr(t, err, ErrRecordConflict, true)
}

func TestStoreOldIndexLines(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "ssot")
	task := "T-2026-010"
	dir := filepath.Join(root, "tasks", task)
	if err := os.MkdirAll(filepath.Join(dir, "messages"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The layout the previous version wrote: fsynced files, id-and-kind lines.
	var index bytes.Buffer
	for i := range 2 {
		r := StoredRecord{ID: fmt.Sprintf("event-%s-%d", task, i), Kind: KindEvent, TaskID: task,
			RecordedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), Body: json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"a <b> & c"}`, i))}
		data, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "messages", r.ID+".json"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&index, "{\"id\":%q,\"kind\":\"event\"}\n", r.ID)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.jsonl"), index.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	s, err := NewStore(root, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantHistory(t, s, task, 2)
	res, err := s.Record(ctx, batch(task, 0, 4))
	if err != nil || res.Written != 2 {
		t.Fatalf("write over old lines: %+v, %v", res, err)
	}
	_, err = s.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{entry(fmt.Sprintf("event-%s-0", task), KindEvent, `{"n":99}`)}})
	appErr(t, err, ErrRecordConflict, true)

	raw, _ := os.ReadFile(filepath.Join(dir, "index.jsonl"))
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(string(raw), index.String()) || !strings.Contains(lines[3], `"body":{"n":3`) {
		t.Errorf("index:\n%s", raw)
	}

	// A file an old line names is the source: removed by hand, it is gone
	// from History until kept again, then at its place.
	s2, err := NewStore(root, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantHistory(t, s2, task, 4)
	if err := os.Remove(filepath.Join(dir, "messages", fmt.Sprintf("event-%s-1.json", task))); err != nil {
		t.Fatal(err)
	}
	if got := historyIDs(t, s2, task); len(got) != 3 {
		t.Errorf("history without a file an old line names = %v", got)
	}
	if _, err := s2.Get(fmt.Sprintf("event-%s-1", task)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a removed old record = %v", err)
	}
	if res, err := s2.Record(ctx, batch(task, 1, 2)); err != nil || res.Written != 1 {
		t.Fatalf("keeping a removed old record again: %+v, %v", res, err)
	}
	wantHistory(t, s2, task, 4)
	s3, err := NewStore(root, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantHistory(t, s3, task, 4)
}
