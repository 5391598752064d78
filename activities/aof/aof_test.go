package aof

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
)

type fakeRecords struct {
	saves     []ssot.AOFSave
	decisions map[string]int64
	appended  []ssot.Entry
}

func (f *fakeRecords) SaveAOF(_ context.Context, in ssot.AOFSave) error {
	f.saves = append(f.saves, in)
	return nil
}

func (f *fakeRecords) SaveDecisions(_ context.Context, subject string, rev int64, _ []ssot.PendingDecision) error {
	f.decisions[subject] = rev
	return nil
}

func (f *fakeRecords) SaveOutbox(context.Context, string, int64, []ssot.OutboxMessage) error {
	return nil
}

func (f *fakeRecords) Append(_ context.Context, _ string, e []ssot.Entry) (ssot.AppendResult, error) {
	f.appended = append(f.appended, e...)
	return ssot.AppendResult{Written: len(e)}, nil
}

// TestSaveAOFMirror writes a task's steps into AOF's layout: run
// artifacts under runs/, inputs under the status directory (moved with
// the status), each event once in the day's log whatever the retries.
func TestSaveAOFMirror(t *testing.T) {
	dir := t.TempDir()
	store := &fakeRecords{decisions: map[string]int64{}}
	a := &AOF{Store: store, DataDir: dir}
	at := time.Date(2026, 2, 9, 21, 0, 0, 0, time.UTC)
	const id = "TASK-2026-02-09-061"
	step := func(rev int64, status string, arts []ssot.AOFArtifact, evs ...string) AOFSaveInput {
		in := AOFSaveInput{Subject: "aof-" + id, Save: ssot.AOFSave{
			Task: &ssot.AOFTask{TaskID: id, Status: status, Rev: rev, CreatedAt: at, UpdatedAt: at,
				Body: json.RawMessage(`{"title":"QA","body":"Check it.\n\n## Work Log\n\n- line\n","metadata":{"delegationDepth":1}}`)},
			Artifacts: arts,
		}}
		for _, e := range evs {
			in.Save.Events = append(in.Save.Events, ssot.AOFEvent{ID: e, TaskID: id, Type: "task.transitioned", At: at, Payload: json.RawMessage(`{"reason":"x"}`)})
		}
		return in
	}
	first := step(1, "ready", []ssot.AOFArtifact{
		{TaskID: id, Name: "inputs/handoff.json", Rev: 1, Body: `{"taskId":"` + id + `"}`},
		{TaskID: id, Name: "inputs/handoff.md", Rev: 1, Body: "# Handoff Request\n"},
	}, id+"-e1")
	for range 2 {
		if _, err := a.SaveAOF(context.Background(), first); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tasks", "ready", id, "inputs", "handoff.md")); err != nil {
		t.Fatal(err)
	}
	second := step(2, "in_progress", []ssot.AOFArtifact{{TaskID: id, Name: "run.json", Rev: 2, Body: `{"status":"running"}`}}, id+"-e2")
	if _, err := a.SaveAOF(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tasks", "in-progress", id, "inputs", "handoff.json")); err != nil {
		t.Errorf("the task's directory did not follow its status: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tasks", "ready", id)); !os.IsNotExist(err) {
		t.Errorf("the old status directory is left: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "tasks", "in-progress", id+".md"))
	if err != nil || !strings.HasPrefix(string(md), "---\nid: "+id+"\ntitle: \"QA\"\nstatus: in-progress\n") || !strings.Contains(string(md), "## Work Log") {
		t.Errorf("task file %q: %v", md, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tasks", "ready", id+".md")); !os.IsNotExist(err) {
		t.Errorf("the task file of the old status is left: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "runs", id, "run.json")); err != nil || string(b) != `{"status":"running"}` {
		t.Errorf("run.json %q %v", b, err)
	}
	log, err := os.ReadFile(filepath.Join(dir, "events", "2026-02-09.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(log)), "\n"); len(lines) != 2 || !strings.Contains(lines[0], `"timestamp":"2026-02-09T21:00:00.000Z"`) {
		t.Errorf("event log %q", log)
	}
	if store.decisions["aof-"+id] != 2 || len(store.saves) != 3 {
		t.Errorf("decisions %v saves %d", store.decisions, len(store.saves))
	}
	del := step(3, "in_progress", []ssot.AOFArtifact{{TaskID: id, Name: "run.json", Rev: 3, Deleted: true}})
	if _, err := a.SaveAOF(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", id, "run.json")); !os.IsNotExist(err) {
		t.Errorf("a deleted artifact is left: %v", err)
	}
	bad := step(4, "ready", []ssot.AOFArtifact{{TaskID: id, Name: "../../etc/x", Rev: 4, Body: "x"}})
	if _, err := a.SaveAOF(context.Background(), bad); err == nil {
		t.Error("an artifact outside the task's directory was written")
	}
}

// TestAOFEventLogMirrors: events the API logs itself reach the store and
// the mirror's day log, each once.
func TestAOFEventLogMirrors(t *testing.T) {
	dir := t.TempDir()
	store := &fakeRecords{decisions: map[string]int64{}}
	l := &AOFEventLog{Store: store, DataDir: dir}
	at := time.Date(2026, 2, 9, 21, 0, 0, 0, time.UTC)
	ev := ssot.AOFEvent{ID: "ev-1", TaskID: "TASK-2026-02-09-066", Type: "protocol.message.rejected", Actor: "swe-qa", At: at,
		Payload: json.RawMessage(`{"reason":"task_not_found"}`)}
	for range 2 {
		if err := l.SaveAOF(context.Background(), ssot.AOFSave{Events: []ssot.AOFEvent{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(store.saves) != 2 {
		t.Errorf("%d saves in the store", len(store.saves))
	}
	b, err := os.ReadFile(filepath.Join(dir, "events", "2026-02-09.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"type":"protocol.message.rejected"`); n != 1 || !strings.Contains(string(b), `"reason":"task_not_found"`) {
		t.Errorf("the mirror's log holds %d of the event: %s", n, b)
	}
}

// TestSaveAgentReviewWritten: a save that adds to the review's chain
// tells the git export, naming the review's AMP task id; one that adds
// nothing does not.
func TestSaveAgentReviewWritten(t *testing.T) {
	var marked []string
	a := &AOF{Store: &fakeRecords{decisions: map[string]int64{}}, Written: func(id string) { marked = append(marked, id) }}
	in := AgentReviewSaveInput{Subject: "T-2026-0209057001", Rev: 1,
		Records: []activities.RecordEntry{{ID: "review_request-T-2026-0209057001-1", Kind: ssot.KindMessage, Body: json.RawMessage(`{}`)}}}
	if _, err := a.SaveAgentReview(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	in.Records, in.Rev = nil, 2
	if _, err := a.SaveAgentReview(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if len(marked) != 1 || marked[0] != "T-2026-0209057001" {
		t.Errorf("marked %v, want the review once", marked)
	}
}

// TestAOFEventLogAppendsWithoutRereading: the mirror's day log is read
// once to learn its ids, not again for every event; an event already in
// it, retried or written by AOF's own tools, is not written twice.
func TestAOFEventLogAppendsWithoutRereading(t *testing.T) {
	dir := t.TempDir()
	l := &AOFEventLog{Store: &fakeRecords{decisions: map[string]int64{}}, DataDir: dir}
	at := time.Date(2026, 2, 10, 9, 0, 0, 0, time.UTC)
	p := filepath.Join(dir, "events", "2026-02-10.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"id":"ev-aof","type":"task.created","timestamp":"2026-02-10T08:00:00.000Z","actor":"aof","payload":{}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	aofEventsMu.Lock()
	clear(dayIndexes)
	before := eventBytesScanned
	aofEventsMu.Unlock()
	save := func(id string) {
		t.Helper()
		ev := ssot.AOFEvent{ID: id, Type: "protocol.message.received", Actor: "swe", At: at, Payload: json.RawMessage(`{"n":1}`)}
		if err := l.SaveAOF(context.Background(), ssot.AOFSave{Events: []ssot.AOFEvent{ev}}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 300
	for i := range n {
		save("ev-" + strconv.Itoa(i))
	}
	save("ev-7")
	save("ev-aof")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != n+1 {
		t.Errorf("the day's log has %d lines, want %d: no event twice", lines, n+1)
	}
	aofEventsMu.Lock()
	scanned := eventBytesScanned - before
	aofEventsMu.Unlock()
	if scanned > int64(len(b)) {
		t.Errorf("%d bytes read to append to a %d-byte log: it was read again per event", scanned, len(b))
	}
}
