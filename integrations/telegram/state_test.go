package telegram

import (
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/chat"
)

func TestStatePrunesNoteRequests(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	err = s.Update(now, func(d *stateData) {
		d.Notes["-1001:7"] = chat.Note{Token: "a", UserID: "42", At: now.Add(-chat.NoteWait - time.Minute)}
		d.Notes["-1001:8"] = chat.Note{Token: "b", UserID: "42", At: now.Add(-time.Minute)}
	})
	if err != nil {
		t.Fatal(err)
	}
	again, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var notes map[string]chat.Note
	again.View(func(d *stateData) { notes = d.Notes })
	if _, ok := notes["-1001:7"]; ok || notes["-1001:8"].UserID != "42" {
		t.Errorf("notes kept %v; want only the recent request", notes)
	}
}
