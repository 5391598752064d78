package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func entry(id string, kind RecordKind, body string) RecordEntry {
	return RecordEntry{ID: id, Kind: kind, Body: json.RawMessage(body)}
}

func historyIDs(t *testing.T, s *Store, task string) []string {
	t.Helper()
	h, err := s.History(task)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(h))
	for i, r := range h {
		ids[i] = r.ID
	}
	return ids
}

func TestStoreRecordIdempotent(t *testing.T) {
	s := newStore(t, StoreOptions{})
	ctx := context.Background()
	in := RecordInput{TaskID: "T-2026-001", Entries: []RecordEntry{
		entry("task_dispatch-T-2026-001-100", KindMessage, `{"a": 1, "b": [1,2]}`),
	}}
	res, err := s.Record(ctx, in)
	if err != nil || res.Written != 1 {
		t.Fatalf("first write: %+v, %v", res, err)
	}

	t.Run("SameIsNoOp", func(t *testing.T) {
		same := in
		same.Entries = []RecordEntry{entry("task_dispatch-T-2026-001-100", KindMessage, `{"b":[1,2],"a":1}`)}
		same.Entries[0].RecordedAt = time.Now().Add(time.Hour) // ignored
		res, err := s.Record(ctx, same)
		if err != nil || res.Written != 0 {
			t.Fatalf("repeat: %+v, %v", res, err)
		}
		if ids := historyIDs(t, s, "T-2026-001"); len(ids) != 1 {
			t.Errorf("history after a repeat = %v, want one record", ids)
		}
	})
	t.Run("OtherBodyConflicts", func(t *testing.T) {
		other := RecordInput{TaskID: "T-2026-001", Entries: []RecordEntry{
			entry("ack-T-2026-001-200", KindAck, `{}`),
			entry("task_dispatch-T-2026-001-100", KindMessage, `{"a":2}`),
		}}
		_, err := s.Record(ctx, other)
		appErr(t, err, ErrRecordConflict, true)
		if _, err := s.Get("ack-T-2026-001-200"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a call with a conflict must write nothing; Get = %v", err)
		}
	})
	t.Run("OtherKindConflicts", func(t *testing.T) {
		_, err := s.Record(ctx, RecordInput{TaskID: "T-2026-001", Entries: []RecordEntry{entry("task_dispatch-T-2026-001-100", KindEvent, `{"a":1,"b":[1,2]}`)}})
		appErr(t, err, ErrRecordConflict, true)
	})
	t.Run("Invalid", func(t *testing.T) {
		for _, in := range []RecordInput{
			{TaskID: "../x", Entries: []RecordEntry{entry("a", KindEvent, `{}`)}},
			{TaskID: "T-1", Entries: []RecordEntry{entry("a/b", KindEvent, `{}`)}},
			{TaskID: "T-1", Entries: []RecordEntry{entry("a", KindEvent, `{nope`)}},
			{TaskID: "T-1", Entries: []RecordEntry{entry("a", "", `{}`)}},
		} {
			_, err := s.Record(ctx, in)
			appErr(t, err, ErrInvalidRecord, true)
		}
	})
}

func TestStoreHistoryAndReads(t *testing.T) {
	now := time.Date(2026, 2, 26, 14, 32, 7, 0, time.UTC)
	s := newStore(t, StoreOptions{Now: func() time.Time { return now }})
	ctx := context.Background()
	// Ids chosen so that name order differs from write order.
	order := []string{"task_result-T-2026-044-300", "ack-T-2026-044-301", "decision-1", "review_request-T-2026-044-302"}
	for i, id := range order {
		in := RecordInput{TaskID: "T-2026-044", Entries: []RecordEntry{entry(id, KindMessage, fmt.Sprintf(`{"n":%d}`, i))}, Task: json.RawMessage(fmt.Sprintf(`{"status":"s%d"}`, i))}
		if _, err := s.Record(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Record(ctx, RecordInput{TaskID: "T-2026-045", Entries: []RecordEntry{entry("escalation-T-2026-045-1", KindMessage, `{}`)}}); err != nil {
		t.Fatal(err)
	}
	if got := historyIDs(t, s, "T-2026-044"); strings.Join(got, ",") != strings.Join(order, ",") {
		t.Errorf("history = %v, want %v", got, order)
	}

	r, err := s.Get("ack-T-2026-044-301")
	if err != nil || r.TaskID != "T-2026-044" || r.Kind != KindMessage || !sameJSON(r.Body, json.RawMessage(`{"n":1}`)) || !r.RecordedAt.Equal(now) {
		t.Errorf("Get = %+v, %v", r, err)
	}
	if r, err := s.Get("decision-1"); err != nil || r.TaskID != "T-2026-044" {
		t.Errorf("Get of an id without a task = %+v, %v", r, err)
	}
	if _, err := s.Get("ack-T-2026-044-999"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of an unknown id = %v, want ErrNotFound", err)
	}
	state, err := s.Task("T-2026-044")
	if err != nil || !sameJSON(state, json.RawMessage(`{"status":"s3"}`)) {
		t.Errorf("Task = %s, %v", state, err)
	}
	if _, err := s.Task("T-2026-999"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Task of an unknown task = %v", err)
	}
	if _, err := s.History("T-2026-999"); !errors.Is(err, ErrNotFound) {
		t.Errorf("History of an unknown task = %v", err)
	}
	tasks, err := s.Tasks()
	if err != nil || strings.Join(tasks, ",") != "T-2026-044,T-2026-045" {
		t.Errorf("Tasks = %v, %v", tasks, err)
	}
}

func TestTaskOfMsgID(t *testing.T) {
	tests := []struct{ id, task string }{
		{"task_dispatch-T-2026-044-1740576727001", "T-2026-044"},
		{"ack-T-2026-001-5", "T-2026-001"},
		{"decision-1", ""},
		{"weird", ""},
		{"a-b-notdigits", ""},
	}
	for _, tc := range tests {
		got, ok := taskOfMsgID(tc.id)
		if got != tc.task || ok != (tc.task != "") {
			t.Errorf("taskOfMsgID(%q) = %q, %v; want %q", tc.id, got, ok, tc.task)
		}
	}
}

func TestStoreCrashSafety(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "ssot")
	s := openStore(t, root)
	task := "T-2026-007"
	if _, err := s.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{entry("a-T-2026-007-1", KindMessage, `{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "tasks", task)
	msgs := filepath.Join(dir, "messages")
	index := filepath.Join(dir, "index.jsonl")

	// What interrupted writes of this and the previous version leave:
	// temporary files, the third name of a swap, and a record file whose
	// journal line was never written, so whose call did not succeed.
	if err := os.MkdirAll(msgs, 0o755); err != nil {
		t.Fatal(err)
	}
	leftovers := []string{filepath.Join(msgs, ".tmp-123456"), filepath.Join(dir, ".tmp-654321"), filepath.Join(dir, prevFile)}
	for _, p := range leftovers {
		if err := os.WriteFile(p, []byte(`{"id":"a-T-2026-007-9","kind":"message"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	orphan := StoredRecord{ID: "a-T-2026-007-2", Kind: KindMessage, TaskID: task, RecordedAt: time.Now().UTC(), Body: json.RawMessage(`{"n":2}`)}
	data, _ := json.Marshal(orphan)
	orphanFile := filepath.Join(msgs, orphan.ID+".json")
	if err := os.WriteFile(orphanFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// An index append torn in the middle of a line.
	f, err := os.OpenFile(index, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"a-T-2026-00`)
	f.Close()

	// A reader sees the journal only: neither the torn line nor the orphan.
	if got := historyIDs(t, s, task); strings.Join(got, ",") != "a-T-2026-007-1" {
		t.Fatalf("history after a crash = %v", got)
	}

	// A new process (a fresh Store) writes: it cuts the torn line and
	// keeps the retry of the interrupted call.
	s2 := openStore(t, root)
	res, err := s2.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{
		entry("a-T-2026-007-2", KindMessage, `{"n":2}`), // the retry of the interrupted call
		entry("a-T-2026-007-3", KindMessage, `{"n":3}`),
	}})
	if err != nil || res.Written != 2 {
		t.Fatalf("write after a crash: %+v, %v", res, err)
	}
	if got := historyIDs(t, s2, task); strings.Join(got, ",") != "a-T-2026-007-1,a-T-2026-007-2,a-T-2026-007-3" {
		t.Errorf("history after the write = %v", got)
	}
	raw, _ := os.ReadFile(index)
	if n := strings.Count(string(raw), "a-T-2026-007-2"); n != 1 || !strings.HasSuffix(string(raw), "\n") || strings.Contains(string(raw), `"a-T-2026-00"`) {
		t.Errorf("index after the write (retry %d times):\n%s", n, raw)
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s not removed: %v", p, err)
		}
	}
	if got, err := os.ReadFile(orphanFile); err != nil || string(got) != string(data) {
		t.Errorf("a record file of the previous version was changed: %q, %v", got, err)
	}
}

func TestStoreConcurrentWriters(t *testing.T) {
	s := newStore(t, StoreOptions{})
	ctx := context.Background()
	const tasks, perTask, writersPerTask = 6, 15, 3
	var wg sync.WaitGroup
	errs := make(chan error, tasks*writersPerTask)
	for ti := range tasks {
		for w := range writersPerTask {
			wg.Go(func() {
				task := fmt.Sprintf("T-2026-%03d", ti)
				// Every writer of a task writes the same records, as
				// retried activities would: each must be kept once.
				for i := range perTask {
					id := fmt.Sprintf("event-%s-%d", task, i)
					_, err := s.Record(ctx, RecordInput{TaskID: task, Entries: []RecordEntry{entry(id, KindEvent, fmt.Sprintf(`{"i":%d}`, i))}, Task: json.RawMessage(fmt.Sprintf(`{"w":%d}`, w))})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for ti := range tasks {
		ids := historyIDs(t, s, fmt.Sprintf("T-2026-%03d", ti))
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("task %d: %s twice in history", ti, id)
			}
			seen[id] = true
		}
		if len(ids) != perTask {
			t.Errorf("task %d: %d records, want %d", ti, len(ids), perTask)
		}
	}
}

func TestStoreErrors(t *testing.T) {
	s := newStore(t, StoreOptions{})
	if err := s.AppendError(ErrorEntry{Remote: "10.0.0.1:5000", Source: "http", Reason: "protocol_version AMP/2.0", Raw: `{"protocol_version":"AMP/2.0"}`}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendError(ErrorEntry{Source: "cli", Reason: "not JSON", Raw: strings.Repeat("x", maxErrorRaw+10)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Errors()
	if err != nil || len(got) != 2 {
		t.Fatalf("Errors = %v, %v", got, err)
	}
	if got[0].Source != "http" || got[0].Remote != "10.0.0.1:5000" || got[0].Time.IsZero() || got[1].Source != "cli" {
		t.Errorf("entries = %+v", got)
	}
	if len(got[1].Raw) > maxErrorRaw+len("…(cut)") {
		t.Errorf("raw input not cut: %d bytes", len(got[1].Raw))
	}
}

func TestStoreGitMode(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "ssot.git")
	gitT(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	s := newStore(t, StoreOptions{Commit: true, Push: true, Remote: bare})
	ctx := context.Background()
	in := RecordInput{TaskID: "T-2026-001", Entries: []RecordEntry{entry("task_result-T-2026-001-1740576727001", KindMessage, `{"x":1}`)}, Task: json.RawMessage(`{"status":"review"}`)}
	if _, err := s.Record(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, in); err != nil { // no change: no commit
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, RecordInput{TaskID: "T-2026-001", Task: json.RawMessage(`{"status":"done"}`)}); err != nil {
		t.Fatal(err)
	}
	// The error log stays out of git.
	if err := s.AppendError(ErrorEntry{Source: "http", Reason: "not JSON", Raw: "{"}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushErrors(); err != nil {
		t.Fatal(err)
	}
	log := gitT(t, s.Root(), "log", "--format=%s")
	want := "ssot: task state (T-2026-001)\nssot: message task_result-T-2026-001-1740576727001 (T-2026-001)"
	if log != want {
		t.Errorf("SSOT log:\n%s\nwant:\n%s", log, want)
	}
	if pushed := gitT(t, bare, "log", "--format=%s", "main"); pushed != want {
		t.Errorf("pushed log:\n%s\nwant:\n%s", pushed, want)
	}
	if st := gitT(t, s.Root(), "status", "--porcelain"); st != "" {
		t.Errorf("SSOT work tree not clean:\n%s", st)
	}
	if files := gitT(t, s.Root(), "ls-files"); files != "tasks/T-2026-001/index.jsonl\ntasks/T-2026-001/task.json" {
		t.Errorf("SSOT files committed:\n%s", files)
	}
}

func TestStoreGitPushFailsThenHeals(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "not-yet.git")
	s := newStore(t, StoreOptions{Push: true, Remote: missing})
	ctx := context.Background()
	in := RecordInput{TaskID: "T-2026-003", Entries: []RecordEntry{entry("ack-T-2026-003-1", KindAck, `{}`)}}
	if _, err := s.Record(ctx, in); err == nil {
		t.Fatal("a push to a missing remote must fail the write so it is retried")
	}
	gitT(t, filepath.Dir(missing), "init", "-q", "--bare", missing)
	res, err := s.Record(ctx, in) // the activity's retry
	if err != nil || res.Written != 0 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if got := gitT(t, missing, "log", "--format=%s", "main"); got != "ssot: ack ack-T-2026-003-1 (T-2026-003)" {
		t.Errorf("pushed log = %q", got)
	}
}

func benchRecord(b *testing.B, entries int, withTask bool) {
	s := newStore(b, StoreOptions{})
	ctx := context.Background()
	body := json.RawMessage(`{"msg_id":"x","protocol_version":"AMP/1.0","type":"task_result","payload":{"subtask_id":"T-2026-001-S1","diff_summary":{"files_changed":["a.go","b.go"],"lines_added":68,"lines_removed":24}}}`)
	task := json.RawMessage(`{"task_id":"T-2026-001","status":"review","reject_count":0,"timeline":[{"kind":"message"},{"kind":"ack"}]}`)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		in := RecordInput{TaskID: fmt.Sprintf("T-2026-%03d", n%50)}
		for range entries {
			n++
			in.Entries = append(in.Entries, RecordEntry{ID: fmt.Sprintf("event-%s-%d", in.TaskID, n), Kind: KindEvent, Body: body})
		}
		if withTask {
			in.Task = task
		}
		if _, err := s.Record(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreRecord(b *testing.B) {
	b.Run("One", func(b *testing.B) { benchRecord(b, 1, false) })
	b.Run("Batch4WithTask", func(b *testing.B) { benchRecord(b, 4, true) })
}
