package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
)

// What ssot import makes of the file SSOT's records, states and error
// log in the store's terms.

// decisionDigest is the digest a decision record names, for the chain to
// carry beside it; empty for other records and records without one.
func decisionDigest(r activities.StoredRecord) string {
	if r.Kind != activities.KindDecision {
		return ""
	}
	var d struct {
		Digest string `json:"digest"`
	}
	if json.Unmarshal(r.Body, &d) != nil {
		return ""
	}
	return d.Digest
}

// fileState turns a task.json into the store's state of the task, as the
// worker's record does, at revision 0 so that any state the task's
// workflow saves replaces it. It returns nil and why when there is none or
// it does not parse.
func fileState(taskID string, raw json.RawMessage, readErr error) (*ssot.TaskState, string) {
	switch {
	case errors.Is(readErr, activities.ErrNotFound):
		return nil, "none"
	case readErr != nil:
		return nil, "unreadable: " + readErr.Error()
	}
	var named struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return nil, "not saved: task.json does not parse: " + err.Error()
	}
	st, err := activities.TaskStateOf(taskID, 0, raw)
	if err != nil {
		return nil, "not saved: task.json does not parse: " + err.Error()
	}
	if named.TaskID != taskID || st.Status == "" {
		return nil, "not saved: task.json names no status or another task"
	}
	return &st, ""
}

// importErrors appends the file error log's entries the store does not
// hold yet: an entry counts as held when one with the same time, source,
// reason and raw input is stored, once for each time it is.
func importErrors(ctx context.Context, db ssot.Store, errs []activities.ErrorEntry) (int, error) {
	if len(errs) == 0 {
		return 0, nil
	}
	held := map[string]int{}
	p := ssot.Page{Limit: ssot.MaxLimit}
	for {
		page, next, err := db.Errors(ctx, p)
		if err != nil {
			return 0, err
		}
		for _, e := range page {
			held[errorKey(e)]++
		}
		if next == "" {
			break
		}
		p.Cursor = next
	}
	written := 0
	for _, fe := range errs {
		e := ssot.ErrorEntry{RecordedAt: fe.Time, Source: fe.Source, Reason: fe.Reason, Raw: fe.Raw}
		if fe.Remote != "" {
			// The store has no column for it; the reason keeps it.
			e.Reason += " (from " + fe.Remote + ")"
		}
		if e.Source == "" {
			e.Source = "unknown"
		}
		if k := errorKey(e); held[k] > 0 {
			held[k]--
			continue
		}
		if err := db.AppendError(ctx, e); err != nil {
			return written, err
		}
		written++
	}
	return written, nil
}

func errorKey(e ssot.ErrorEntry) string {
	return strconv.FormatInt(e.RecordedAt.UnixMicro(), 10) + "\x00" + e.Source + "\x00" + e.Reason + "\x00" + e.Raw
}
