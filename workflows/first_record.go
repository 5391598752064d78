package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// PlanRecordID is the id of a task's first SSOT record: its plan and the
// policy it runs by.
func PlanRecordID(taskID string) string { return "plan-" + taskID }

// restartRevs is the room each start under one task id has for its
// state revisions: a start after a refused one (task.Input.Restarts)
// writes its states above every revision of the refused ones.
const restartRevs = int64(1) << 40

// planRecordID is the plan record's id of the start in: PlanRecordID,
// with the start's number after a refused start under the same id
// (plan-T-2026-008-2), so the refused plan's record stays as it was.
func planRecordID(in task.Input) string {
	if in.Restarts == 0 {
		return PlanRecordID(in.TaskID)
	}
	return fmt.Sprintf("%s-%d", PlanRecordID(in.TaskID), in.Restarts+1)
}

// FirstRecord is the task's first write in the SSOT, built from its input
// and the worker's policy p alone: the plan record, and the state the
// task starts in at Rev 0, which the workflow's own first write (Rev 1)
// replaces. The workflow writes the same plan record as its first, so
// the store keeps one whichever lands first.
func FirstRecord(in task.Input, p task.Policy, at time.Time) (activities.RecordInput, error) {
	in.Policy = stricter(p, in.Handling)
	in.Carried = nil
	// The workflow's check records t.In as it is then: the input with the
	// policy set, nothing carried.
	body, err := json.Marshal(in)
	if err != nil {
		return activities.RecordInput{}, fmt.Errorf("encoding the plan of task %s: %w", in.TaskID, err)
	}
	view, err := json.Marshal(newTaskState(in, at).view())
	if err != nil {
		return activities.RecordInput{}, fmt.Errorf("encoding the state of task %s: %w", in.TaskID, err)
	}
	return activities.RecordInput{TaskID: in.TaskID, Rev: int64(in.Restarts) * restartRevs, Task: view, Entries: []activities.RecordEntry{
		{ID: planRecordID(in), Kind: ssot.KindEvent, Body: body, RecordedAt: at},
	}}, nil
}

// recordStart writes a started task's first record (FirstRecord) when the
// client has a Recorder, so the task is read back from the store as soon
// as its start answers, on any worker.
func (c *Client) recordStart(ctx context.Context, in task.Input) error {
	if c.Recorder == nil || c.Policy == nil {
		return nil
	}
	rec, err := FirstRecord(in, *c.Policy, time.Now())
	if err != nil {
		return err
	}
	if _, err := c.Recorder.Record(ctx, rec); err != nil {
		return &task.Error{Code: task.CodeUnavailable, Err: err,
			Message: fmt.Sprintf("task %s started, but writing it in the SSOT failed (a retry with the same Idempotency-Key answers with it): %v", in.TaskID, err)}
	}
	return nil
}
