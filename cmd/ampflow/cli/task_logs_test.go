package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/transcripts"
)

func serveTranscripts(t *testing.T) (*ssot.DB, string) {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	api := httpapi.New(httpapi.Options{Tasks: &fakeTasks{}, Store: db})
	transcripts.Register(api, transcripts.Options{Store: db, Poll: 10 * time.Millisecond})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return db, srv.URL
}

func TestTaskLogs(t *testing.T) {
	db, url := serveTranscripts(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	three := 3
	if _, err := db.AppendTranscript(ctx, "T-2026-001", []ssot.TranscriptEntry{
		{Role: "executor", Run: 1, At: at, Kind: ssot.TranscriptToolCall, Tool: "Bash", Text: `{"command":"sh -c 'exit 3'"}`},
		{Role: "executor", Run: 1, At: at, Kind: ssot.TranscriptToolResult, Tool: "Bash", Text: "line 1\nline 2", IsError: true, ExitCode: &three, CostUSD: 0.01, InputTokens: 90, OutputTokens: 10},
		{Role: "reviewer", Run: 1, At: at, Kind: ssot.TranscriptText, Text: "Reading."},
	}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AMPFLOW_API_URL": url}
	t.Run("Text", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "task", "logs", "T-2026-001", "--role", "executor")
		wantExit(t, r, ExitOK)
		want := "10:00:00 executor#1 tool_call Bash: {\"command\":\"sh -c 'exit 3'\"}\n" +
			"10:00:00 executor#1 tool_result Bash exit 3 [$0.0100, 100 tokens]:\n    line 1\n    line 2\n"
		if r.stdout != want {
			t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "task", "logs", "T-2026-001", "-o", "json")
		wantExit(t, r, ExitOK)
		var es []ssot.TranscriptEntry
		if err := json.Unmarshal([]byte(r.stdout), &es); err != nil || len(es) != 3 || *es[1].ExitCode != 3 {
			t.Errorf("stdout %q: %v", r.stdout, err)
		}
	})
	t.Run("BadRole", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "task", "logs", "T-2026-001", "--role", "admin")
		wantExit(t, r, ExitUsage)
	})
	t.Run("RunWithoutRole", func(t *testing.T) {
		r := runFake(t, &fakeTasks{}, "", env, "task", "logs", "T-2026-001", "--run", "2")
		wantExit(t, r, ExitUsage)
	})
	t.Run("Follow", func(t *testing.T) {
		// The task is done: -f prints every entry, then ends.
		st := &ssot.TaskState{TaskID: "T-2026-001", Status: "done", Rev: 1, State: json.RawMessage(`{"task_id":"T-2026-001","status":"done"}`)}
		if _, err := db.Save(ctx, "T-2026-001", nil, st); err != nil {
			t.Fatal(err)
		}
		r := runFake(t, &fakeTasks{}, "", env, "task", "logs", "T-2026-001", "-f", "-o", "json")
		wantExit(t, r, ExitOK)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 3 {
			t.Errorf("-f -o json printed %d lines, want 3: %q", len(lines), r.stdout)
		}
	})
}
