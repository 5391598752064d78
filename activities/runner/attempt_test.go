//go:build unix

package runner

import (
	"os"
	"testing"
)

// TestNoteAttempt: an attempt record is a Reaped with PID 0 and its
// owner, nothing is killed for it, and its removal leaves nothing.
func TestNoteAttempt(t *testing.T) {
	dir := t.TempDir()
	owner := &RunOwner{TaskID: "T-2026-001", MsgID: "task_dispatch-T-2026-001-1", Role: "executor", WorkflowID: "task-T-2026-001", RunID: "r", ActivityID: "5"}
	forget, err := NoteAttempt(dir, owner)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ReapRuns(dir)
	if err != nil || len(runs) != 1 || runs[0].PID != 0 || runs[0].Killed || runs[0].Owner == nil || *runs[0].Owner != *owner || runs[0].Since.IsZero() {
		t.Fatalf("ReapRuns = %+v, %v", runs, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("ReapRuns left %d files", len(ents))
	}
	forget, err = NoteAttempt(dir, owner)
	if err != nil {
		t.Fatal(err)
	}
	forget()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("forget left %d files", len(ents))
	}
	if _, err := NoteAttempt(dir, &RunOwner{TaskID: "T-2026-001"}); err == nil {
		t.Error("an attempt with no activity id was written")
	}
}
