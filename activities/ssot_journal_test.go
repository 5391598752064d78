package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	s := openStore(t, root)
	task := "T-2026-009"
	for i, in := range []RecordInput{batch(task, 0, 3), batch(task, 3, 5)} {
		in.Task = json.RawMessage(fmt.Sprintf(`{"status":"s%d"}`, i))
		if _, err := s.Record(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "tasks", task)
	// The cut tore the journal line of a call that never returned, and
	// task.json, whose state was written in place and never synced.
	f, err := os.OpenFile(filepath.Join(dir, "index.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"id":"event-%s-5","kind":"event","task_id":"%s","recorded_at":"2026-`, task, task)
	f.Close()
	if err := os.Truncate(filepath.Join(dir, taskFile), 8); err != nil {
		t.Fatal(err)
	}

	// Readers in a new process: every kept record, and the older state.
	s2 := openStore(t, root)
	wantHistory(t, s2, task, 5)
	for _, i := range []int{1, 3} {
		id := fmt.Sprintf("event-%s-%d", task, i)
		if r, err := s2.Get(id); err != nil || r.ID != id || !sameJSON(r.Body, json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"a <b> & c"}`, i))) {
			t.Errorf("Get(%s) = %+v, %v", id, r, err)
		}
	}
	if st, err := s2.Task(task); err != nil || !sameJSON(st, json.RawMessage(`{"status":"s0"}`)) {
		t.Errorf("Task after a torn task.json = %s, %v; want the spare's state", st, err)
	}

	// Its first write cuts the torn line off, keeps the retry and replaces task.json.
	in := batch(task, 3, 7)
	in.Task = json.RawMessage(`{"status":"s2"}`)
	res, err := s2.Record(ctx, in)
	if err != nil || res.Written != 2 {
		t.Fatalf("write after a power cut: %+v, %v", res, err)
	}
	wantHistory(t, s2, task, 7)
	if st, err := s2.Task(task); err != nil || !sameJSON(st, in.Task) {
		t.Errorf("Task after the next write = %s, %v", st, err)
	}
	_, err = s2.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{entry(fmt.Sprintf("event-%s-1", task), KindEvent, `{"n":99}`)}})
	appErr(t, err, ErrRecordConflict, true)
}

// TestStoreJournalWithFiles reads and writes the layout of the previous
// version: whole journal lines and unsynced record files, some of which
// a power cut lost or tore.
func TestStoreJournalWithFiles(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "ssot")
	task := "T-2026-011"
	msgs := filepath.Join(root, "tasks", task, "messages")
	if err := os.MkdirAll(msgs, 0o755); err != nil {
		t.Fatal(err)
	}
	file := func(i int) string { return filepath.Join(msgs, fmt.Sprintf("event-%s-%d.json", task, i)) }
	var index bytes.Buffer
	for _, e := range batch(task, 0, 5).Entries {
		r := StoredRecord{ID: e.ID, Kind: e.Kind, TaskID: task, RecordedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Body: e.Body}
		line, _ := json.Marshal(r)
		index.Write(append(line, '\n'))
		data, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(filepath.Join(msgs, r.ID+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "tasks", task, "index.jsonl"), index.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file(1)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file(3), file(5)} { // 5: a call cut before its line
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	s := openStore(t, root)
	wantHistory(t, s, task, 5)
	if r, err := s.Get(fmt.Sprintf("event-%s-3", task)); err != nil || !sameJSON(r.Body, json.RawMessage(`{"n":3,"text":"a <b> & c"}`)) {
		t.Errorf("Get of a record whose file is torn = %+v, %v", r, err)
	}
	res, err := s.Record(ctx, batch(task, 0, 7))
	if err != nil || res.Written != 2 {
		t.Fatalf("write over the previous layout: %+v, %v", res, err)
	}
	wantHistory(t, s, task, 7)
	_, err = s.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{entry(fmt.Sprintf("event-%s-3", task), KindEvent, `{"n":99}`)}})
	appErr(t, err, ErrRecordConflict, true)

	// The files are neither restored, removed nor written.
	if _, err := os.Stat(file(1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a lost record file came back: %v", err)
	}
	for _, i := range []int{3, 5} {
		if fi, err := os.Stat(file(i)); err != nil || fi.Size() != 0 {
			t.Errorf("torn record file %d was changed: %v", i, err)
		}
	}
	if _, err := os.Stat(file(6)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a new record got a file: %v", err)
	}
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

	s := openStore(t, root)
	wantHistory(t, s, task, 2)
	res, err := s.Record(ctx, batch(task, 0, 4))
	if err != nil || res.Written != 2 {
		t.Fatalf("write over old lines: %+v, %v", res, err)
	}
	_, err = s.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{entry(fmt.Sprintf("event-%s-0", task), KindEvent, `{"n":99}`)}})
	appErr(t, err, ErrRecordConflict, true)

	if _, err := os.Stat(filepath.Join(dir, "messages", fmt.Sprintf("event-%s-3.json", task))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a new record got a file: %v", err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "index.jsonl"))
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(string(raw), index.String()) || !strings.Contains(lines[3], `"body":{"n":3`) {
		t.Errorf("index:\n%s", raw)
	}

	// A file an old line names is the source: removed by hand, it is gone
	// from History until kept again, then at its place.
	s2 := openStore(t, root)
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
	s3 := openStore(t, root)
	wantHistory(t, s3, task, 4)
}

// TestStoreReopen decides retries and conflicts in a new process, whose
// cache is filled from the journal alone.
func TestStoreReopen(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "ssot")
	task := "T-2026-012"
	a := entry("task_result-T-2026-012-1", KindMessage, `{"text":"a <b> & c","n":1}`)
	b := entry("ack-T-2026-012-2", KindAck, `{"x":[1,2]}`)
	c := entry("event-T-2026-012-4", KindEvent, `{"y":"<&>"}`)
	fresh := func() *Store {
		s := openStore(t, root)
		return s
	}
	if _, err := fresh().Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{a, b}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "tasks", task, "messages")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("records must live in the journal only; messages/: %v", err)
	}
	record := func(entries ...RecordEntry) (RecordResult, error) {
		return fresh().Record(ctx, RecordInput{TaskID: task, Entries: entries})
	}

	t.Run("SameIsSkipped", func(t *testing.T) {
		if res, err := record(a, b); err != nil || res.Written != 0 {
			t.Errorf("retry: %+v, %v", res, err)
		}
	})
	t.Run("OtherSpellingIsSkipped", func(t *testing.T) {
		if res, err := record(entry(a.ID, a.Kind, `{ "n": 1.0, "text": "a \u003cb> & c" }`)); err != nil || res.Written != 0 {
			t.Errorf("retry with keys in another order: %+v, %v", res, err)
		}
	})
	t.Run("RetryDecidedFromMemory", func(t *testing.T) {
		s := fresh()
		if res, err := s.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{b, c}}); err != nil || res.Written != 1 {
			t.Fatalf("first write of a new Store: %+v, %v", res, err)
		}
		// With the journal emptied behind its back, a Store that read
		// the journal would keep the retry again.
		index := filepath.Join(root, "tasks", task, "index.jsonl")
		kept, err := os.ReadFile(index)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(index, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := s.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{a, b, c}})
		if werr := os.WriteFile(index, kept, 0o644); werr != nil {
			t.Fatal(werr)
		}
		if err != nil || res.Written != 0 {
			t.Errorf("retry: %+v, %v", res, err)
		}
	})
	t.Run("OtherBodyConflicts", func(t *testing.T) {
		_, err := record(entry("event-T-2026-012-3", KindEvent, `{}`), entry(a.ID, a.Kind, `{"text":"a <b> & c","n":2}`))
		appErr(t, err, ErrRecordConflict, true)
	})
	t.Run("OtherKindConflicts", func(t *testing.T) {
		_, err := record(entry(b.ID, KindEvent, `{"x":[1,2]}`))
		appErr(t, err, ErrRecordConflict, true)
	})
	if got := historyIDs(t, fresh(), task); strings.Join(got, ",") != a.ID+","+b.ID+","+c.ID {
		t.Errorf("history = %v; a call with a conflict must write nothing", got)
	}
}

func TestCompactBody(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{`{"t":"a <b> & c"}`, `{"t":"a \u003cb\u003e \u0026 c"}`, true},
		{`{ "a" : [1, 2] }`, `{"a":[1,2]}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, false}, // equal values: sameAsKept reads the journal
	}
	for _, tc := range tests {
		// The digest of a body must not change on its way through a journal line.
		line, err := json.Marshal(StoredRecord{ID: "x", Body: json.RawMessage(tc.b)})
		if err != nil {
			t.Fatal(err)
		}
		var kept StoredRecord
		if err := json.Unmarshal(line, &kept); err != nil {
			t.Fatal(err)
		}
		_, sa, errA := compactBody(json.RawMessage(tc.a))
		_, sb, errB := compactBody(kept.Body)
		if errA != nil || errB != nil || (sa == sb) != tc.same {
			t.Errorf("compactBody(%s) and of %s kept: same digest = %v, want %v (%v, %v)", tc.a, tc.b, sa == sb, tc.same, errA, errB)
		}
	}
}

// syncedPaths records the path of every fsync until the test ends; the
// first fsync of a path ending in failSuffix, when set, fails.
func syncedPaths(t *testing.T, failSuffix string) *[]string {
	var mu sync.Mutex
	var paths []string
	failed := false
	orig := fsync
	fsync = func(f *os.File) error {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, f.Name())
		if failSuffix != "" && !failed && strings.HasSuffix(f.Name(), failSuffix) {
			failed = true
			return errors.New("injected fsync failure")
		}
		return orig(f)
	}
	t.Cleanup(func() { fsync = orig })
	return &paths
}

// TestStoreRetryAfterKillSyncs covers a process killed between the
// journal's write and its fsync: the retry in a new process finds the
// records already journaled and writes nothing, so it must sync what it
// found before it reports them kept.
func TestStoreRetryAfterKillSyncs(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "ssot")
	s := openStore(t, root)
	task := "T-2026-021"
	in := batch(task, 0, 2)
	if _, err := s.Record(ctx, in); err != nil {
		t.Fatal(err)
	}
	// The journal as the killed process left it: written, maybe unsynced.
	synced := syncedPaths(t, "")
	s2 := openStore(t, root)
	res, err := s2.Record(ctx, in)
	if err != nil || res.Written != 0 {
		t.Fatalf("retry: %+v, %v; want nothing written", res, err)
	}
	want := []string{filepath.Join(root, "tasks", task, "index.jsonl"), filepath.Join(root, "tasks", task), filepath.Join(root, "tasks")}
	for _, p := range want {
		if !slices.Contains(*synced, p) {
			t.Errorf("the retry did not fsync %s; synced %v", p, *synced)
		}
	}
}

// TestStoreFailedFirstAppend covers a new task whose first journal fsync
// fails: the retry must still sync the directories that lead to it.
func TestStoreFailedFirstAppend(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "ssot")
	s := openStore(t, root)
	task := "T-2026-022"
	synced := syncedPaths(t, "index.jsonl")
	if _, err := s.Record(ctx, batch(task, 0, 1)); err == nil {
		t.Fatal("first Record succeeded despite the failed fsync")
	}
	*synced = nil
	if res, err := s.Record(ctx, batch(task, 0, 1)); err != nil || res.Written != 1 {
		t.Fatalf("retry: %+v, %v; want one record written", res, err)
	}
	for _, p := range []string{filepath.Join(root, "tasks", task), filepath.Join(root, "tasks")} {
		if !slices.Contains(*synced, p) {
			t.Errorf("the retry did not fsync %s; synced %v", p, *synced)
		}
	}
	wantHistory(t, s, task, 1)
}
