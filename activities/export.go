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

// ExportSource is what an export reads of the SQL store; ssot.Chains
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
	// ChainKey keys the chains' hashes, as the store's (ssot.ChainKey);
	// nil for a store given no key.
	ChainKey []byte
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
	// Refused lists tasks whose file was left as it was: their chain in
	// the store fails verification, or does not extend the head exported
	// before (the store's chain was rewritten or cut under the anchor).
	Refused []ExportRefusal `json:"refused,omitempty"`
	// Committed is set when the export made a commit; Pushed when the
	// branch was pushed (Push set and the remote took it).
	Committed bool `json:"committed"`
	Pushed    bool `json:"pushed"`
}

// ExportRefusal is a task an export would not write, and why.
type ExportRefusal struct {
	TaskID  string `json:"task_id"`
	Problem string `json:"problem"`
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
	key  []byte

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
	return &Exporter{src: src, dir: dir, git: g, push: opts.Push, key: opts.ChainKey}, nil
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
		changed, refused, err := e.exportTask(ctx, id)
		if err != nil {
			return res, err
		}
		if refused != "" {
			res.Refused = append(res.Refused, ExportRefusal{TaskID: id, Problem: refused})
			continue
		}
		res.Tasks++
		if changed {
			res.Changed++
		}
	}
	if whole {
		n, refused, err := e.removeOthers(taskIDs)
		if err != nil {
			return res, err
		}
		res.Removed = n
		res.Refused = append(res.Refused, refused...)
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
// file holds, and reports whether it did. It verifies the chain first,
// and leaves the file as it is, saying why (refused), when the chain
// fails or does not extend the head the file holds: the export is an
// anchor of what the store held, never rewritten to hide a change.
func (e *Exporter) exportTask(ctx context.Context, taskID string) (changed bool, refused string, _ error) {
	doc := TaskExport{TaskID: taskID, Records: []ssot.Record{}}
	p := ssot.Page{Limit: ssot.MaxLimit}
	for {
		recs, next, err := e.src.History(ctx, taskID, p)
		if errors.Is(err, ssot.ErrNotFound) {
			return false, "", nil // no records yet: nothing to mirror
		}
		if err != nil {
			return false, "", fmt.Errorf("exporting task %s: %w", taskID, err)
		}
		doc.Records = append(doc.Records, recs...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	// The head is the last row read, so the file agrees with itself even
	// when a write lands while the chain is read.
	head, err := ssot.VerifyRecords(e.key, taskID, doc.Records)
	if err != nil {
		return false, "the store's chain fails verification: " + err.Error(), nil
	}
	doc.Head = head
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return false, "", fmt.Errorf("exporting task %s: %w", taskID, err)
	}
	data = append(data, '\n')
	tchanged, err := e.exportTranscript(ctx, taskID)
	if err != nil {
		return false, "", err
	}
	path := filepath.Join(e.dir, exportTasksDir, taskID+".json")
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return tchanged, "", nil
	}
	if err == nil {
		if problem := extends(old, doc.Records); problem != "" {
			return false, problem, nil
		}
	}
	if err := writeFile(path, data); err != nil {
		return false, "", fmt.Errorf("exporting task %s to %s: %w", taskID, path, err)
	}
	return true, "", nil
}

// transcriptSource reads runs' transcripts (*ssot.DB); a source without
// them exports none.
type transcriptSource interface {
	Transcript(ctx context.Context, taskID string, f ssot.TranscriptFilter) ([]ssot.TranscriptEntry, error)
}

// exportTranscript writes the task's transcript beside its chain,
// tasks/<task_id>.transcript.jsonl, one entry a line, when it has one and
// it changed.
func (e *Exporter) exportTranscript(ctx context.Context, taskID string) (bool, error) {
	src, ok := e.src.(transcriptSource)
	if !ok {
		return false, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for after := int64(0); ; {
		es, err := src.Transcript(ctx, taskID, ssot.TranscriptFilter{After: after, Limit: ssot.MaxLimit})
		if err != nil {
			return false, fmt.Errorf("exporting the transcript of task %s: %w", taskID, err)
		}
		for _, en := range es {
			if err := enc.Encode(en); err != nil {
				return false, fmt.Errorf("exporting the transcript of task %s: %w", taskID, err)
			}
			after = en.Seq
		}
		if len(es) < ssot.MaxLimit {
			break
		}
	}
	if buf.Len() == 0 {
		return false, nil
	}
	path := filepath.Join(e.dir, exportTasksDir, taskID+".transcript.jsonl")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, buf.Bytes()) {
		return false, nil
	}
	if err := writeFile(path, buf.Bytes()); err != nil {
		return false, fmt.Errorf("exporting the transcript of task %s to %s: %w", taskID, path, err)
	}
	return true, nil
}

// extends says why recs, the store's chain, is not the chain exported
// in old extended: "" when the head old names is recs' record of that
// sequence number.
func extends(old []byte, recs []ssot.Record) string {
	var prev TaskExport
	if err := json.Unmarshal(old, &prev); err != nil {
		return "the exported file cannot be read: " + err.Error()
	}
	h := prev.Head
	switch {
	case h.Seq == 0:
		return ""
	case h.Seq > int64(len(recs)):
		return fmt.Sprintf("the exported head #%d is past the store's chain, which ends at #%d: records were removed from the store", h.Seq, len(recs))
	case recs[h.Seq-1].Hash != h.Hash:
		return fmt.Sprintf("the exported head #%d (%.12s) is not the store's record #%d (%.12s): the store's chain was rewritten", h.Seq, h.Hash, h.Seq, recs[h.Seq-1].Hash)
	}
	return ""
}

// removeOthers removes the task files of tasks not in keep; a file that
// holds a chain is kept and refused instead: the store lost that chain.
func (e *Exporter) removeOthers(keep []string) (int, []ExportRefusal, error) {
	dir := filepath.Join(e.dir, exportTasksDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, nil, fmt.Errorf("exporting the SSOT: %w", err)
	}
	var refused []ExportRefusal
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
		path := filepath.Join(dir, ent.Name())
		if old, err := os.ReadFile(path); err == nil {
			if problem := extends(old, nil); problem != "" {
				refused = append(refused, ExportRefusal{TaskID: id, Problem: problem})
				continue
			}
		}
		if err := os.Remove(path); err != nil {
			return n, refused, fmt.Errorf("exporting the SSOT: %w", err)
		}
		n++
	}
	return n, refused, nil
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
