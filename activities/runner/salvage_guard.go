package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RunNote is what a checkout's last run left, written when the run ended:
// which message it ran and the tracked files missing then. A salvage
// later counts only those deletions as the agent's.
type RunNote struct {
	MsgID   string    `json:"msg_id"`
	Ended   time.Time `json:"ended"`
	Deleted []string  `json:"deleted"`
}

// runNoteFile is kept in the checkout's git directory, out of its tree.
const runNoteFile = "ampflow-run.json"

// ErrNotIntact is returned (wrapped) by a salvage of a checkout whose
// HEAD or index is gone: what it holds cannot be told from damage.
var ErrNotIntact = errors.New("the checkout's HEAD or index is not intact")

// RefusedSalvage is the error of a salvage that would delete tracked
// files the last run did not leave deleted.
type RefusedSalvage struct {
	Dir     string
	Files   []string // the deletions no run accounts for
	LastRun string   // RunNote.MsgID, "" when no run left a note
}

func (e *RefusedSalvage) Error() string {
	shown := e.Files
	more := ""
	if len(shown) > 5 {
		shown, more = shown[:5], fmt.Sprintf(" and %d more", len(e.Files)-5)
	}
	run := "no run of the executor left a note of its deletions"
	if e.LastRun != "" {
		run = "the executor's run on " + e.LastRun + " did not leave them deleted"
	}
	return fmt.Sprintf("salvage of %s refused: it would delete %d tracked files (%s%s) and %s",
		e.Dir, len(e.Files), strings.Join(shown, ", "), more, run)
}

func gitDir(ctx context.Context, dir string) (string, error) {
	d, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return "", fmt.Errorf("finding the git directory of %s: %w", dir, err)
	}
	return d, nil
}

// NoteRunEnd records that the run on msgID ended in the checkout at dir,
// with the tracked files it left deleted.
func NoteRunEnd(ctx context.Context, dir, msgID string) error {
	gd, err := gitDir(ctx, dir)
	if err != nil {
		return err
	}
	deleted, err := deletedFiles(ctx, dir)
	if err != nil {
		return err
	}
	b, err := json.Marshal(RunNote{MsgID: msgID, Ended: time.Now().UTC(), Deleted: deleted})
	if err != nil {
		return err
	}
	tmp := filepath.Join(gd, runNoteFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("noting the run's end in %s: %w", dir, err)
	}
	return os.Rename(tmp, filepath.Join(gd, runNoteFile))
}

// LastRun reads the note of the checkout's last run; ok is false when no
// run left one.
func LastRun(ctx context.Context, dir string) (note RunNote, ok bool) {
	gd, err := gitDir(ctx, dir)
	if err != nil {
		return RunNote{}, false
	}
	b, err := os.ReadFile(filepath.Join(gd, runNoteFile))
	if err != nil || json.Unmarshal(b, &note) != nil {
		return RunNote{}, false
	}
	return note, true
}

func deletedFiles(ctx context.Context, dir string) ([]string, error) {
	out, err := git(ctx, dir, "ls-files", "--deleted", "-z")
	if err != nil {
		return nil, fmt.Errorf("listing the deleted files of %s: %w", dir, err)
	}
	files := []string{}
	for f := range strings.SplitSeq(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// checkIntact refuses a checkout whose HEAD is no commit or whose index
// is missing or unreadable: a checkout a removal stopped half way.
func checkIntact(ctx context.Context, dir string) error {
	if _, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return fmt.Errorf("%s: %w (HEAD: %v)", dir, ErrNotIntact, err)
	}
	idx, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return fmt.Errorf("%s: %w (%v)", dir, ErrNotIntact, err)
	}
	if _, err := os.Stat(idx); err != nil {
		return fmt.Errorf("%s: %w (index: %v)", dir, ErrNotIntact, err)
	}
	if _, err := git(ctx, dir, "ls-files", "--stage", "--", ":(literal).ampflow-index-check"); err != nil {
		return fmt.Errorf("%s: %w (index unreadable: %v)", dir, ErrNotIntact, err)
	}
	return nil
}

// SalvageLeftover is SalvageTask for a checkout no run is working in: the
// work an ended, failed or killed run left. It refuses a checkout that
// is not intact, and a salvage that would delete tracked files the last
// run did not leave deleted (*RefusedSalvage). The commit's message
// names the run.
func SalvageLeftover(ctx context.Context, dir, task, why string) (ref, commit string, note RunNote, err error) {
	if err := checkIntact(ctx, dir); err != nil {
		return "", "", RunNote{}, err
	}
	note, noted := LastRun(ctx, dir)
	deleted, err := deletedFiles(ctx, dir)
	if err != nil {
		return "", "", note, err
	}
	var unaccounted []string
	for _, f := range deleted {
		if !noted || !slices.Contains(note.Deleted, f) {
			unaccounted = append(unaccounted, f)
		}
	}
	if len(unaccounted) > 0 {
		return "", "", note, &RefusedSalvage{Dir: dir, Files: unaccounted, LastRun: note.MsgID}
	}
	msg := "ampflow: salvage of what the executor left uncommitted (" + why + ")"
	if note.MsgID != "" {
		msg = fmt.Sprintf("ampflow: salvage of what the executor's run on %s left uncommitted (%s)", note.MsgID, why)
	}
	ref, commit, err = SalvageTask(ctx, dir, task, msg)
	return ref, commit, note, err
}
