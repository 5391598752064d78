package ssot

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestTranscript(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		const id = "T-2026-001"
		three := 3
		got, err := s.AppendTranscript(ctx, id, []TranscriptEntry{
			{Role: "executor", Run: 1, Kind: TranscriptStart, Text: "codex"},
			{Role: "executor", Run: 1, Kind: TranscriptToolCall, Tool: "command_execution", Text: `{"command":"sh -c 'exit 3'"}`},
			{Role: "executor", Run: 1, Kind: TranscriptToolResult, Tool: "command_execution", Text: "out", IsError: true, ExitCode: &three,
				CostUSD: 0.25, InputTokens: 100, OutputTokens: 7},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Seq != 1 || got[2].Seq != 3 || got[0].At.IsZero() {
			t.Fatalf("appended %+v, want seq 1..3 stamped", got)
		}
		if _, err := s.AppendTranscript(ctx, id, []TranscriptEntry{{Role: "reviewer", Run: 1, Kind: TranscriptText, Text: "looks fine"}}); err != nil {
			t.Fatal(err)
		}
		all, err := s.Transcript(ctx, id, TranscriptFilter{})
		if err != nil || len(all) != 4 {
			t.Fatalf("Transcript = %d entries, %v; want 4", len(all), err)
		}
		r := all[2]
		if r.Kind != TranscriptToolResult || !r.IsError || r.ExitCode == nil || *r.ExitCode != 3 || r.CostUSD != 0.25 || r.InputTokens != 100 || r.Text != "out" {
			t.Errorf("tool result read back as %+v", r)
		}
		if all[0].ExitCode != nil || all[0].IsError {
			t.Errorf("start entry read back as %+v", all[0])
		}
		for _, tc := range []struct {
			name string
			f    TranscriptFilter
			want []int64
		}{
			{"After", TranscriptFilter{After: 2}, []int64{3, 4}},
			{"Limit", TranscriptFilter{Limit: 2}, []int64{1, 2}},
			{"Role", TranscriptFilter{Role: "reviewer"}, []int64{4}},
			{"Run", TranscriptFilter{Role: "executor", Run: 2}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				es, err := s.Transcript(ctx, id, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				var seqs []int64
				for _, e := range es {
					seqs = append(seqs, e.Seq)
				}
				if len(seqs) != len(tc.want) || (len(seqs) > 0 && seqs[0] != tc.want[0]) {
					t.Errorf("seqs %v, want %v", seqs, tc.want)
				}
			})
		}
		if run, err := s.TranscriptRun(ctx, id, "executor"); err != nil || run != 1 {
			t.Errorf("TranscriptRun = %d, %v; want 1", run, err)
		}
		n, err := s.NoteTranscript(ctx, id, "executor", "message from alice delivered")
		if err != nil || n.Run != 1 || n.Seq != 5 || n.Kind != TranscriptNote {
			t.Errorf("NoteTranscript = %+v, %v; want run 1 seq 5", n, err)
		}
		if n, err := s.NoteTranscript(ctx, "T-2026-002", "executor", "before any run"); err != nil || n.Run != 0 || n.Seq != 1 {
			t.Errorf("NoteTranscript of a task without runs = %+v, %v; want run 0 seq 1", n, err)
		}
		var inv *InvalidError
		if _, err := s.AppendTranscript(ctx, id, []TranscriptEntry{{Role: "executor", Kind: "text", Text: strings.Repeat("x", MaxTranscriptText+1)}}); !errors.As(err, &inv) || inv.Field != "entries[0].text" {
			t.Errorf("too long text: err = %v, want an InvalidError on entries[0].text", err)
		}
		if _, err := s.AppendTranscript(ctx, id, []TranscriptEntry{{Kind: "text"}}); !errors.As(err, &inv) || inv.Field != "entries[0].role" {
			t.Errorf("no role: err = %v, want an InvalidError on entries[0].role", err)
		}
		if _, err := s.Transcript(ctx, id, TranscriptFilter{Limit: MaxLimit + 1}); !errors.As(err, &inv) || inv.Field != "limit" {
			t.Errorf("limit past MaxLimit: err = %v", err)
		}
		if es, _ := s.Transcript(ctx, id, TranscriptFilter{}); len(es) != 5 {
			t.Errorf("refused appends wrote: %d entries, want 5", len(es))
		}
	})
}

// TestTranscriptConcurrent has writers race on one task: every entry is
// kept, each seq once.
func TestTranscriptConcurrent(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					if _, err := s.AppendTranscript(ctx, "T-2026-003", []TranscriptEntry{{Role: "executor", Run: w + 1, Kind: "text", Text: "x"},
						{Role: "executor", Run: w + 1, Kind: "text", Text: "y"}}); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		es, err := s.Transcript(ctx, "T-2026-003", TranscriptFilter{Limit: MaxLimit})
		if err != nil || len(es) != 80 {
			t.Fatalf("%d entries, %v; want 80", len(es), err)
		}
		for i, e := range es {
			if e.Seq != int64(i+1) {
				t.Fatalf("entry %d has seq %d", i, e.Seq)
			}
		}
	})
}
