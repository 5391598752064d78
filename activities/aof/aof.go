package aof

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
)

// Records keeps AOF tasks, their artifacts and events, and the open
// decisions of any workflow.
type Records interface {
	SaveAOF(ctx context.Context, in ssot.AOFSave) error
	SaveDecisions(ctx context.Context, subject string, rev int64, ds []ssot.PendingDecision) error
	SaveOutbox(ctx context.Context, subject string, rev int64, msgs []ssot.OutboxMessage) error
	Append(ctx context.Context, taskID string, entries []ssot.Entry) (ssot.AppendResult, error)
}

// AOF holds the AOF task workflow's side effects: its steps go to the
// SQL store and, when DataDir is set, into AOF's own file layout there
// (runs/<taskId>/…, tasks/<status>/<taskId>/inputs/…, events/), so AOF's
// tools read them.
type AOF struct {
	Store Records
	// DataDir is aof.data_dir; empty mirrors nothing.
	DataDir string
	// Written, when set, is told each agent review whose AMP chain a save
	// added to: the git export (ssot.git) follows from it, as it does
	// for tasks. It must not block.
	Written func(taskID string)
}

// AOFSaveInput is one step of an AOF task.
type AOFSaveInput struct {
	Save ssot.AOFSave `json:"save"`
	// Subject is the workflow id; Decisions are its open decisions,
	// saved under the task's Rev.
	Subject   string                 `json:"subject"`
	Decisions []ssot.PendingDecision `json:"decisions"`
	// Records are the decision engine's records (decisions, approvals,
	// outcomes), appended to the subject's chain in the SSOT, where an
	// admin's answer finds the decision it is for.
	Records []activities.RecordEntry `json:"records,omitempty"`
}

// AOFSaveResult is empty; it exists so fields can be added.
type AOFSaveResult struct{}

// SaveAOF writes a step of an AOF task. A retried step writes nothing
// twice: the store keeps the newest Rev and each event id once, and the
// mirror's files are rewritten whole.
func (a *AOF) SaveAOF(ctx context.Context, in AOFSaveInput) (AOFSaveResult, error) {
	if err := a.Store.SaveAOF(ctx, in.Save); err != nil {
		return AOFSaveResult{}, storeError(err)
	}
	if len(in.Records) > 0 {
		if _, err := a.Store.Append(ctx, in.Subject, activities.StoreEntries(in.Records)); err != nil {
			return AOFSaveResult{}, storeError(err)
		}
	}
	if t := in.Save.Task; t != nil && in.Subject != "" {
		if err := a.Store.SaveDecisions(ctx, in.Subject, t.Rev, in.Decisions); err != nil {
			return AOFSaveResult{}, storeError(err)
		}
	}
	if a.DataDir != "" {
		if err := a.mirror(in.Save); err != nil {
			return AOFSaveResult{}, fmt.Errorf("mirroring AOF files under %s: %w", a.DataDir, err)
		}
	}
	return AOFSaveResult{}, nil
}

// storeError makes the store's refusals of its input non-retryable.
func storeError(err error) error {
	var inv *ssot.InvalidError
	if errors.As(err, &inv) {
		return nonRetryable(err)
	}
	return err
}

// aofStatuses are the status directories of AOF's layout.
var aofStatuses = []string{"backlog", "ready", "in-progress", "review", "blocked", "done"}

// aofStatusDir is AOF's directory name of a status.
func aofStatusDir(status string) string { return strings.ReplaceAll(status, "_", "-") }

func (a *AOF) mirror(s ssot.AOFSave) error {
	if t := s.Task; t != nil {
		if err := a.moveTaskDir(t.TaskID, aofStatusDir(t.Status)); err != nil {
			return err
		}
		if err := a.writeTaskFile(*t); err != nil {
			return err
		}
	}
	for _, art := range s.Artifacts {
		p, err := a.artifactPath(s.Task, art)
		if err != nil {
			return err
		}
		if art.Deleted {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		if err := writeFileAtomic(p, []byte(art.Body)); err != nil {
			return err
		}
	}
	for _, e := range s.Events {
		if err := a.appendEvent(e); err != nil {
			return err
		}
	}
	return nil
}

// artifactPath is where an artifact lives in AOF's layout: run artifacts
// under runs/<taskId>/, the rest under the task's status directory.
func (a *AOF) artifactPath(t *ssot.AOFTask, art ssot.AOFArtifact) (string, error) {
	if filepath.IsLocal(art.Name) && !strings.Contains(art.Name, "/") {
		return filepath.Join(a.DataDir, "runs", art.TaskID, art.Name), nil
	}
	if !filepath.IsLocal(art.Name) {
		return "", nonRetryable(fmt.Errorf("artifact name %q leaves the task's directory", art.Name))
	}
	status := ""
	if t != nil && t.TaskID == art.TaskID {
		status = aofStatusDir(t.Status)
	} else if status = a.findTaskDir(art.TaskID); status == "" {
		status = "ready"
	}
	return filepath.Join(a.DataDir, "tasks", status, art.TaskID, filepath.FromSlash(art.Name)), nil
}

func (a *AOF) findTaskDir(taskID string) string {
	for _, st := range aofStatuses {
		if _, err := os.Stat(filepath.Join(a.DataDir, "tasks", st, taskID)); err == nil {
			return st
		}
	}
	return ""
}

// moveTaskDir moves a task's directory to its status's.
func (a *AOF) moveTaskDir(taskID, status string) error {
	have := a.findTaskDir(taskID)
	if have == "" || have == status {
		return nil
	}
	to := filepath.Join(a.DataDir, "tasks", status, taskID)
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.Rename(filepath.Join(a.DataDir, "tasks", have, taskID), to)
}

// appendEvent adds an event to the day's events/<YYYY-MM-DD>.jsonl
// unless its id is there already.
func (a *AOF) appendEvent(e ssot.AOFEvent) error {
	aofEventsMu.Lock()
	defer aofEventsMu.Unlock()
	line, err := jsonLine(e)
	if err != nil {
		return err
	}
	p := filepath.Join(a.DataDir, "events", e.At.UTC().Format("2006-01-02")+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	ix, err := dayIndexOf(p, f)
	if err != nil {
		return fmt.Errorf("reading the ids of %s: %w", p, err)
	}
	if ix.ids[e.ID] {
		return nil
	}
	n, err := f.Write(line)
	ix.size += int64(n)
	if err != nil {
		delete(dayIndexes, p) // read the file again next time
		return err
	}
	ix.ids[e.ID] = true
	return f.Close()
}

func writeFileAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}

func nonRetryable(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), ErrAOFInvalid, err)
}

// ErrAOFInvalid refuses an AOF step the store cannot take as it is.
const ErrAOFInvalid = "AOFInvalid"

// jsonLine is an event as one line of AOF's event log.
func jsonLine(e ssot.AOFEvent) ([]byte, error) {
	b, err := json.Marshal(struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Actor     string          `json:"actor"`
		TaskID    string          `json:"taskId,omitempty"`
		Payload   json.RawMessage `json:"payload"`
	}{e.ID, e.Type, e.At.UTC().Format("2006-01-02T15:04:05.000Z"), e.Actor, e.TaskID, e.Payload})
	if err != nil {
		return nil, fmt.Errorf("encoding event %s: %w", e.ID, err)
	}
	return append(b, '\n'), nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// aofTaskFile is what the task file shows of a task's saved body.
type aofTaskFile struct {
	Title        string `json:"title"`
	Body         string `json:"body"`
	Assignee     string `json:"assignee"`
	ParentTaskID string `json:"parentTaskId"`
	Metadata     struct {
		DelegationDepth int  `json:"delegationDepth"`
		ReviewRequired  bool `json:"reviewRequired"`
	} `json:"metadata"`
}

// writeTaskFile writes tasks/<status>/<taskId>.md, the task as AOF keeps
// it: YAML frontmatter, then the body with its work log; the file in any
// other status directory is removed.
func (a *AOF) writeTaskFile(t ssot.AOFTask) error {
	var f aofTaskFile
	if err := json.Unmarshal(t.Body, &f); err != nil {
		return nonRetryable(fmt.Errorf("reading AOF task %s: %w", t.TaskID, err))
	}
	status := aofStatusDir(t.Status)
	var b strings.Builder
	b.WriteString("---\n")
	fmt.Fprintf(&b, "id: %s\n", t.TaskID)
	fmt.Fprintf(&b, "title: %s\n", quote(f.Title))
	fmt.Fprintf(&b, "status: %s\n", status)
	if f.Assignee != "" {
		fmt.Fprintf(&b, "routing:\n  agent: %s\n", quote(f.Assignee))
	}
	if f.ParentTaskID != "" {
		fmt.Fprintf(&b, "parentId: %s\n", f.ParentTaskID)
	}
	fmt.Fprintf(&b, "createdAt: %s\n", t.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	fmt.Fprintf(&b, "updatedAt: %s\n", t.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	fmt.Fprintf(&b, "metadata:\n  delegationDepth: %d\n  reviewRequired: %v\n", f.Metadata.DelegationDepth, f.Metadata.ReviewRequired)
	b.WriteString("---\n\n")
	if f.Body != "" {
		b.WriteString(strings.TrimRight(f.Body, "\n") + "\n")
	}
	for _, st := range aofStatuses {
		if st == status {
			continue
		}
		if err := os.Remove(filepath.Join(a.DataDir, "tasks", st, t.TaskID+".md")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return writeFileAtomic(filepath.Join(a.DataDir, "tasks", status, t.TaskID+".md"), []byte(b.String()))
}

// AgentReviewSaveInput is a step of an AOF task's review by the AMP
// reviewer agent: the AMP records of the review's task id, then the
// messages waiting in the reviewer's inbox.
type AgentReviewSaveInput struct {
	// Subject is the review's AMP task id (its workflow id).
	Subject string                   `json:"subject"`
	Rev     int64                    `json:"rev"`
	Records []activities.RecordEntry `json:"records,omitempty"`
	// Outbox replaces the subject's inbox messages; empty clears them.
	Outbox []ssot.OutboxMessage `json:"outbox"`
}

// AgentReviewSaveResult is empty; it exists so fields can be added.
type AgentReviewSaveResult struct{}

// SaveAgentReview writes a step of an agent review. A retried step writes
// nothing twice: records are kept once by id, and an older Rev never
// replaces the inbox of a newer one.
func (a *AOF) SaveAgentReview(ctx context.Context, in AgentReviewSaveInput) (AgentReviewSaveResult, error) {
	if len(in.Records) > 0 {
		res, err := a.Store.Append(ctx, in.Subject, activities.StoreEntries(in.Records))
		if err != nil {
			// A record under a used id with other content is not retried:
			// the review ends, and the admins review instead.
			var conflict *ssot.ConflictError
			if errors.As(err, &conflict) {
				return AgentReviewSaveResult{}, nonRetryable(err)
			}
			return AgentReviewSaveResult{}, storeError(err)
		}
		if res.Written > 0 && a.Written != nil {
			a.Written(in.Subject)
		}
	}
	if err := a.Store.SaveOutbox(ctx, in.Subject, in.Rev, in.Outbox); err != nil {
		return AgentReviewSaveResult{}, storeError(err)
	}
	return AgentReviewSaveResult{}, nil
}
