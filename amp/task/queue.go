package task

import (
	"time"

	"github.com/ampflow/ampflow/amp/decision"
)

// QueueSpec puts a task in its target branch's merge queue: once its
// reviews and final approval pass, the task rebases its branch onto the
// target's head, runs CI on the result, and moves the target to it,
// one task at a time per target branch. A goal's tasks carry one.
type QueueSpec struct {
	// Target is the branch the task's branch is merged into.
	Target string `json:"target"`
	// Goal is the workflow id of the goal the task belongs to, told of
	// each move in the queue (SignalQueueMove); empty for none.
	Goal string `json:"goal,omitempty"`
	// Key is the task's key in that goal.
	Key string `json:"key,omitempty"`
}

// QueueStatus is where a task stands in its target's merge queue.
type QueueStatus string

// Merge queue statuses.
const (
	QueueQueued  QueueStatus = "queued"  // waiting for the target's lease
	QueueMerging QueueStatus = "merging" // holds it: rebase, CI, then the move of the target
	QueueMerged  QueueStatus = "merged"  // the target is at the rebased branch
	// QueueRound: a conflict or a CI failure sent the task back to its
	// executor; it enters the queue again after its review.
	QueueRound QueueStatus = "round"
)

// QueueState is a task's place in its target's merge queue (State.Queue).
type QueueState struct {
	Target string      `json:"target"`
	Status QueueStatus `json:"status"`
	// Rounds counts the rounds the queue sent back to the executor.
	Rounds int `json:"rounds,omitempty"`
	// Merged is the target's new head once merged.
	Merged string `json:"merged,omitempty"`
	// Moves counts the moves told to the task's goal (QueueMove.Seq).
	Moves     int       `json:"moves,omitempty"`
	EnteredAt time.Time `json:"entered_at,omitzero"`
}

// SignalQueueMove tells a goal's workflow of a move of one of its tasks
// in the merge queue. Its payload is a QueueMove.
const SignalQueueMove = "queue_move"

// QueueMove is the payload of SignalQueueMove.
type QueueMove struct {
	// Seq numbers the task's moves from 1: signals may arrive out of
	// order, and an older one is dropped.
	Seq    int         `json:"seq"`
	Key    string      `json:"key"`
	TaskID string      `json:"task_id"`
	Status QueueStatus `json:"status"`
	Rounds int         `json:"rounds,omitempty"`
	// Commit is the target's new head, once merged.
	Commit string    `json:"commit,omitempty"`
	At     time.Time `json:"at"`
}

// KindMergeQueue asks the admins about a task the merge queue cannot
// merge: conflicts or failing CI past policy.max_ci_rounds rounds, or
// a target the queue may not move.
const KindMergeQueue decision.Kind = "merge_queue"

// OptRetryQueue tries the merge queue again, with the round count reset.
const OptRetryQueue = "retry_queue"
