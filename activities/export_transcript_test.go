package activities

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
)

// TestExportTranscript: a task's transcript is exported beside its chain,
// one entry a line, and written again only when it grew.
func TestExportTranscript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git:", err)
	}
	ctx := context.Background()
	db := sqlStore(t)
	appendRecords(t, db, "T-2026-001", "m1")
	three := 3
	if _, err := db.AppendTranscript(ctx, "T-2026-001", []ssot.TranscriptEntry{
		{Role: "executor", Run: 1, Kind: ssot.TranscriptToolResult, Tool: "Bash", Text: "boom", ExitCode: &three}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ssot-git")
	e, err := NewExporter(db, ExportOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Export(ctx, "T-2026-001"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "tasks", "T-2026-001.transcript.jsonl"))
	if err != nil || !strings.Contains(string(data), `"exit_code":3`) || strings.Count(string(data), "\n") != 1 {
		t.Fatalf("exported transcript %q, %v", data, err)
	}
	if res, err := e.Export(ctx, "T-2026-001"); err != nil || res.Changed != 0 {
		t.Errorf("export of an unchanged task: %+v, %v", res, err)
	}
	if _, err := db.NoteTranscript(ctx, "T-2026-001", "executor", "a note"); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Export(ctx, "T-2026-001"); err != nil || res.Changed != 1 {
		t.Errorf("export after the transcript grew: %+v, %v", res, err)
	}
}
