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

	"github.com/ampflow/ampflow/activities/ssot"
)

// ExportSource is what an export reads of the SQL store; ssot.Store
// implements it.
type ExportSource interface {
	Tasks(ctx context.Context, p ssot.Page) ([]string, string, error)
	History(ctx context.Context, taskID string, p ssot.Page) ([]ssot.Record, string, error)
}

// ExportOptions configure an Exporter.
type ExportOptions struct {
	// Dir is the git work tree the export is written to (ssot.git.dir);
	// it is created and initialised when needed.
	Dir string
	// Push pushes each commit to Remote (ssot.git.push).
	Push bool
	// Remote is a remote name or URL; empty means "origin".
	Remote string
	// AuthorName and AuthorEmail sign the commits; empty means "ampflow"
	// and "ampflow@localhost".
	AuthorName, AuthorEmail string
	// GitBin is the git executable; empty means "git" on PATH.
	GitBin string
}

// TaskExport is the file an export writes for a task,
// tasks/<task_id>.json: its chain, in order, and the chain's head.
type TaskExport struct {
	TaskID  string        `json:"task_id"`
	Head    ssot.Head     `json:"head"`
	Records []ssot.Record `json:"records"`
}

// ExportResult says what an Export did.
type ExportResult struct {
	// Tasks counts the tasks exported; Changed those whose file was
	// written because its content changed; Removed the files of tasks the
	// store no longer has (a whole export only).
	Tasks   int `json:"tasks"`
	Changed int `json:"changed"`
	Removed int `json:"removed"`
	// Skipped lists tasks whose id cannot name a file; they are not
	// exported.
	Skipped []string `json:"skipped,omitempty"`
	// Committed is set when the export made a commit; Pushed when the
	// branch was pushed (Push set and the remote took it).
	Committed bool `json:"committed"`
	Pushed    bool `json:"pushed"`
}

// Exporter mirrors the SQL store into a git repository, one JSON file per
// task, committed (and pushed) when something changed. It is the git
// mirror of ssot.git: the store is the record, the repository a copy a
// team can read, diff and back up with git.
//
// The worker calls Export with a task's id after each write of that
// task's records succeeded, off the record path (a failed export is
// logged, never a failed record: the next Export of the task, or a whole
// `ampflow ssot export`, catches up). Calls are serialised.
//
// git runs with the worker's environment (see gitEnv): the push needs the worker's credentials, and the
// repository is ampflow's own, not a task's.
type Exporter struct {
	src  ExportSource
	dir  string
	git  *exportGit
	push bool

	mu sync.Mutex
}

// exportTasksDir is the directory of the task files, inside the work tree.
const exportTasksDir = "tasks"

// NewExporter opens (initialising when needed) the export repository.
func NewExporter(src ExportSource, opts ExportOptions) (*Exporter, error) {
	if opts.Dir == "" {
		return nil, errors.New("exporting the SSOT: ssot.git.dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("exporting the SSOT to %s: %w", opts.Dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, exportTasksDir), 0o755); err != nil {
		return nil, fmt.Errorf("exporting the SSOT to %s (ssot.git.dir): %w", dir, err)
	}
	g, err := openExportGit(dir, opts)
	if err != nil {
		return nil, err
	}
	// The first export of a process pushes even when it commits nothing:
	// a push that failed in an earlier process is made then.
	g.pushPending = opts.Push
	return &Exporter{src: src, dir: dir, git: g, push: opts.Push}, nil
}

// Dir is the export's work tree.
func (e *Exporter) Dir() string { return e.dir }

// Export writes the files of taskIDs, or of every task in the store when
// none is given, and commits them when they changed. A whole export also
// removes the files of tasks the store does not hold.
func (e *Exporter) Export(ctx context.Context, taskIDs ...string) (ExportResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var res ExportResult
	whole := len(taskIDs) == 0
	if whole {
		var err error
		if taskIDs, err = e.allTasks(ctx); err != nil {
			return res, err
		}
	}
	for _, id := range taskIDs {
		if !validName(id) {
			res.Skipped = append(res.Skipped, id)
			continue
		}
		changed, err := e.exportTask(ctx, id)
		if err != nil {
			return res, err
		}
		res.Tasks++
		if changed {
			res.Changed++
		}
	}
	if whole {
		n, err := e.removeOthers(taskIDs)
		if err != nil {
			return res, err
		}
		res.Removed = n
	}
	committed, err := e.git.commitChanged(ctx, exportMessage(taskIDs, whole), filepath.Join(e.dir, exportTasksDir))
	res.Committed = committed
	if err != nil {
		return res, fmt.Errorf("exporting the SSOT to %s: %w", e.dir, err)
	}
	res.Pushed = e.push
	return res, nil
}

func (e *Exporter) allTasks(ctx context.Context) ([]string, error) {
	var ids []string
	p := ssot.Page{Limit: ssot.MaxLimit}
	for {
		page, next, err := e.src.Tasks(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("exporting the SSOT: %w", err)
		}
		ids = append(ids, page...)
		if next == "" {
			return ids, nil
		}
		p.Cursor = next
	}
}

// exportTask writes a task's file when its content differs from what the
// file holds, and reports whether it did.
func (e *Exporter) exportTask(ctx context.Context, taskID string) (bool, error) {
	doc := TaskExport{TaskID: taskID, Records: []ssot.Record{}}
	p := ssot.Page{Limit: ssot.MaxLimit}
	for {
		recs, next, err := e.src.History(ctx, taskID, p)
		if errors.Is(err, ssot.ErrNotFound) {
			return false, nil // no records yet: nothing to mirror
		}
		if err != nil {
			return false, fmt.Errorf("exporting task %s: %w", taskID, err)
		}
		doc.Records = append(doc.Records, recs...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	// The head is the last row read, so the file agrees with itself even
	// when a write lands while the chain is read.
	if n := len(doc.Records); n > 0 {
		doc.Head = ssot.Head{Seq: doc.Records[n-1].Seq, Hash: doc.Records[n-1].Hash}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return false, fmt.Errorf("exporting task %s: %w", taskID, err)
	}
	data = append(data, '\n')
	path := filepath.Join(e.dir, exportTasksDir, taskID+".json")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := writeFile(path, data); err != nil {
		return false, fmt.Errorf("exporting task %s to %s: %w", taskID, path, err)
	}
	return true, nil
}

// removeOthers removes the task files of tasks not in keep.
func (e *Exporter) removeOthers(keep []string) (int, error) {
	dir := filepath.Join(e.dir, exportTasksDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("exporting the SSOT: %w", err)
	}
	sorted := slices.Clone(keep)
	slices.Sort(sorted)
	n := 0
	for _, ent := range ents {
		id, ok := strings.CutSuffix(ent.Name(), ".json")
		if !ok || ent.IsDir() || !validName(id) {
			continue
		}
		if _, found := slices.BinarySearch(sorted, id); found {
			continue
		}
		if err := os.Remove(filepath.Join(dir, ent.Name())); err != nil {
			return n, fmt.Errorf("exporting the SSOT: %w", err)
		}
		n++
	}
	return n, nil
}

// exportMessage names what an export covered, e.g.
// "ssot export: T-2026-001" or "ssot export: all 42 tasks".
func exportMessage(ids []string, whole bool) string {
	switch {
	case whole:
		return fmt.Sprintf("ssot export: all %d tasks", len(ids))
	case len(ids) <= 3:
		return "ssot export: " + strings.Join(ids, ", ")
	}
	return fmt.Sprintf("ssot export: %s and %d more", strings.Join(ids[:3], ", "), len(ids)-3)
}
