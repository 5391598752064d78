package delivery

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
)

// fakeTranscripts keeps the batches written.
type fakeTranscripts struct {
	mu      sync.Mutex
	batches [][]ssot.TranscriptEntry
	runs    int
}

func (f *fakeTranscripts) AppendTranscript(_ context.Context, _ string, es []ssot.TranscriptEntry) ([]ssot.TranscriptEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, append([]ssot.TranscriptEntry(nil), es...))
	return es, nil
}

func (f *fakeTranscripts) TranscriptRun(context.Context, string, string) (int, error) {
	return f.runs, nil
}

func (f *fakeTranscripts) all() []ssot.TranscriptEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ssot.TranscriptEntry
	for _, b := range f.batches {
		out = append(out, b...)
	}
	return out
}

func newTestTranscript(t *testing.T, store *fakeTranscripts, spec runner.Spec, flush time.Duration, limit int) *transcript {
	t.Helper()
	d := &Delivery{Transcripts: store, Log: slog.New(slog.DiscardHandler), Secrets: child.NewScrubber([]string{"worker-secret-123"}),
		transcriptFlush: flush, transcriptLimit: limit}
	return d.startTranscript(context.Background(), "T-2026-001", "executor", "", spec, nil)
}

func TestTranscriptWriter(t *testing.T) {
	store := &fakeTranscripts{runs: 2}
	tw := newTestTranscript(t, store, runner.Spec{Runner: runner.Codex, Model: "gpt-5.5", Secrets: []string{"sk-run-secret-456"}}, time.Hour, 0)
	three := 3
	tw.event(runner.Event{Kind: runner.EventText, Text: "Running the tests."})
	tw.event(runner.Event{Kind: runner.EventToolCall, Tool: "command_execution", ToolID: "c1", Input: json.RawMessage(`{"command":"echo sk-run-secret-456"}`)})
	tw.event(runner.Event{Kind: runner.EventToolResult, Tool: "command_execution", ToolID: "c1", IsError: true, ExitCode: &three,
		Text: strings.Repeat("x", 10<<10) + "\nkey sk-run-secret-456 and worker-secret-123\nFAILED"})
	tw.event(runner.Event{Kind: runner.EventUsage, Usage: runner.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.5, CostReported: true}})
	tw.event(runner.Event{Kind: runner.EventError, Text: "api_retry: overloaded (HTTP 529), attempt 1 of 10"})
	tw.event(runner.Event{Kind: runner.EventSession, SessionID: "s1"})
	tw.end(runner.Outcome{Reason: runner.ReasonExited, Result: true, Started: time.Now().Add(-3 * time.Second), Ended: time.Now()}, nil)

	es := store.all()
	var kinds []string
	for _, e := range es {
		kinds = append(kinds, e.Kind)
		if e.Run != 3 || e.Role != "executor" || e.At.IsZero() {
			t.Errorf("entry %+v: want run 3 of the executor, stamped", e)
		}
		for _, s := range []string{"sk-run-secret-456", "worker-secret-123"} {
			if strings.Contains(e.Text, s) {
				t.Errorf("entry %s holds the secret %s: %q", e.Kind, s, e.Text)
			}
		}
	}
	want := "start text tool_call tool_result usage retry end"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("kinds %v, want %s", kinds, want)
	}
	if es[0].Text != "codex (gpt-5.5)" {
		t.Errorf("start %q", es[0].Text)
	}
	r := es[3]
	if r.ExitCode == nil || *r.ExitCode != 3 || !r.IsError {
		t.Errorf("tool result %+v: want exit 3, an error", r)
	}
	if len(r.Text) > MaxToolOutput+len("…") || !strings.HasSuffix(r.Text, "FAILED") || !strings.Contains(r.Text, "key *** and [redacted]") {
		t.Errorf("tool result text (%d bytes) is not the masked tail: …%q", len(r.Text), r.Text[max(0, len(r.Text)-60):])
	}
	if es[6].CostUSD != 0.5 || es[6].InputTokens != 100 || es[2].CostUSD != 0 {
		t.Errorf("running usage: tool_call %v, end %v; want 0 then 0.5", es[2].CostUSD, es[6].CostUSD)
	}
	if len(store.batches) > 2 {
		t.Errorf("%d writes for 7 entries within one flush interval, want at most 2 (the first entry, then the rest)", len(store.batches))
	}
}

// TestTranscriptBound fills a run past its bound: one note, then only the
// run's end.
func TestTranscriptBound(t *testing.T) {
	store := &fakeTranscripts{}
	tw := newTestTranscript(t, store, runner.Spec{Runner: runner.Claude}, 0, 10<<10)
	line := strings.Repeat("y", 1000)
	for range 50 {
		tw.event(runner.Event{Kind: runner.EventText, Text: line})
	}
	tw.end(runner.Outcome{Reason: runner.ReasonExited, ExitCode: 1}, nil)
	es := store.all()
	notes, texts := 0, 0
	for _, e := range es {
		switch e.Kind {
		case ssot.TranscriptNote:
			notes++
			if !strings.Contains(e.Text, "elided") {
				t.Errorf("note %q", e.Text)
			}
		case ssot.TranscriptText:
			texts++
		}
	}
	if notes != 1 || texts != 10 || es[len(es)-1].Kind != ssot.TranscriptEnd || !es[len(es)-1].IsError {
		t.Errorf("%d notes, %d texts, last %+v; want 1 note, 10 texts, a failed end", notes, texts, es[len(es)-1])
	}
}

// TestTranscriptBatches: a full batch is written at once, before the
// flush interval; the rest waits for it.
func TestTranscriptBatches(t *testing.T) {
	store := &fakeTranscripts{}
	tw := newTestTranscript(t, store, runner.Spec{Runner: runner.Claude}, time.Hour, 0)
	// The start entry is written at once; of the rest, a full batch
	// does not wait for the interval.
	for range 2 * transcriptBatch {
		tw.event(runner.Event{Kind: runner.EventText, Text: "z"})
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(store.all()) < transcriptBatch+1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(store.all()); n < transcriptBatch+1 {
		t.Fatalf("%d entries written before the flush interval, want a batch of %d after the start", n, transcriptBatch)
	}
	tw.end(runner.Outcome{}, nil)
	if n := len(store.all()); n != 2*transcriptBatch+2 {
		t.Errorf("%d entries after end, want %d", n, 2*transcriptBatch+2)
	}
}

func TestFailedSummary(t *testing.T) {
	st := &runState{}
	for i, c := range []string{`{"command":"go test ./..."}`, `{"cmd":"/bin/bash -lc 'go vet ./...'"}`, `{"command":"ls"}`} {
		id := string(rune('a' + i))
		st.noteCommand(runner.Event{Kind: runner.EventToolCall, ToolID: id, Input: json.RawMessage(c)})
		code := []int{127, 127, 0}[i]
		st.noteCommand(runner.Event{Kind: runner.EventToolResult, ToolID: id, ExitCode: &code})
	}
	want := "2 commands failed: `go test ./...` exit 127; `go vet ./...` exit 127"
	if got := failedSummary(st.failed); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := failedSummary(nil); got != "" {
		t.Errorf("summary of none %q", got)
	}
}

// BenchmarkTranscriptEntry is the worker's cost of one entry: what the
// CLI's reader pays (mask, stamp, buffer) and the writer's share of a
// batched store write, on SQLite.
func BenchmarkTranscriptEntry(b *testing.B) {
	store, err := ssot.Open(context.Background(), b.TempDir()+"/ampflow.db")
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	d := &Delivery{Transcripts: store, Log: slog.New(slog.DiscardHandler), transcriptLimit: 1 << 40}
	tw := d.startTranscript(context.Background(), "T-2026-001", "executor", "", runner.Spec{Runner: runner.Codex, Secrets: []string{"sk-secret-value"}}, nil)
	code := 1
	ev := runner.Event{Kind: runner.EventToolResult, Tool: "command_execution", ToolID: "c1", ExitCode: &code, Text: strings.Repeat("output line\n", 40)}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tw.event(ev)
	}
	// The last batches are written inside the timing.
	tw.end(runner.Outcome{}, nil)
}
