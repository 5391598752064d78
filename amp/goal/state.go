package goal

import (
	"fmt"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// WorkflowType is the goal workflow's registered name.
const WorkflowType = "Goal"

// QueryState is the query that returns a goal's State.
const QueryState = "goal_state"

// DecisionGoalPlan is the kind of the decision that approves a goal's
// graph, bound by digest to the whole of it.
const DecisionGoalPlan decision.Kind = "goal_plan"

// Decisions a goal asks besides its plan, and their options.
const (
	// DecisionBlocked asks what to do about a task that ended terminated:
	// the goal cannot be done without it.
	DecisionBlocked decision.Kind = "goal_blocked"
	// OptRetry starts the terminated task again, as a new task on its
	// branch.
	OptRetry = "retry"
	// OptAbandon ends the goal, terminated; tasks still running run on.
	OptAbandon = "abandon"
)

// Status is where a goal stands.
type Status string

// Goal statuses.
const (
	StatusPlanning         Status = "planning"          // the planner proposes the graph (goals.planner)
	StatusAwaitingApproval Status = "awaiting_approval" // the graph waits for the admins
	StatusRunning          Status = "running"           // tasks run or wait on their blockers
	StatusBlocked          Status = "blocked"           // a terminated task holds its dependents: an admin must act
	StatusDone             Status = "done"              // every task is done
	StatusRejected         Status = "rejected"          // the admins rejected the graph
	StatusFailed           Status = "failed"            // the goal could not start (its repository or target)
	StatusTerminated       Status = "terminated"        // an admin abandoned it; its running tasks run on
)

// Terminal says whether a goal in s has ended.
func (s Status) Terminal() bool {
	return s == StatusDone || s == StatusRejected || s == StatusFailed || s == StatusTerminated
}

// TaskStatus is where a task of a goal stands, as the goal sees it.
type TaskStatus string

// Task statuses.
const (
	TaskWaiting    TaskStatus = "waiting"    // its blockers are not all done
	TaskStarting   TaskStatus = "starting"   // its branch is made and its task started
	TaskRunning    TaskStatus = "running"    // its task runs
	TaskDone       TaskStatus = "done"       // its task is done: merged into the target
	TaskTerminated TaskStatus = "terminated" // its task ended terminated (or could not start)
	TaskHeld       TaskStatus = "held"       // a blocker ended terminated: it waits for an admin
)

// TaskState is one task of a goal's state.
type TaskState struct {
	Key       string     `json:"key"`
	Status    TaskStatus `json:"status"`
	BlockedBy []string   `json:"blocked_by,omitempty"`
	// WaitingOn are the blockers not yet done.
	WaitingOn []string `json:"waiting_on,omitempty"`
	// TaskID is the started task's id; empty until it starts.
	TaskID string `json:"task_id,omitempty"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	// Base is the target's head the branch was made from.
	Base      string    `json:"base,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Reason says why the task ended terminated or is held.
	Reason string `json:"reason,omitempty"`
	// Overlaps are the tasks whose branches change files this task's
	// branch changes too, with the files.
	Overlaps []Overlap `json:"overlaps,omitempty"`
	// Queue is where the task stands in the target's merge queue
	// (queued, merging, round, merged); empty before it enters it.
	// QueuedAt is when it last entered it, QueueRounds the rounds the
	// queue sent it back to its executor.
	Queue       task.QueueStatus `json:"queue,omitempty"`
	QueuedAt    time.Time        `json:"queued_at,omitzero"`
	QueueRounds int              `json:"queue_rounds,omitempty"`
	// Merged is the target's head the task's merge made.
	Merged string `json:"merged,omitempty"`
	// QueueSeq is the number of the last queue move taken from the task
	// (task.QueueMove.Seq); an older one arriving late is dropped.
	QueueSeq int `json:"queue_seq,omitempty"`
}

// QueueText says where the task stands in the merge queue: its status,
// the target's head its merge made, and the rounds the queue sent it
// back; empty before it enters the queue.
func (t TaskState) QueueText() string {
	s := string(t.Queue)
	if t.Merged != "" {
		s += " " + t.Merged[:min(len(t.Merged), 12)]
	}
	if t.QueueRounds > 0 {
		s += fmt.Sprintf(" (%d rounds)", t.QueueRounds)
	}
	return s
}

// Proposal is one graph the planner proposed for a goal. Its graph
// itself is in the goal's chain.
type Proposal struct {
	// Round counts the graphs put to the admins: the first, then one
	// more after each rejection. Try counts the planner's answers within
	// a round: a refused graph goes back to it with Problem.
	Round int       `json:"round"`
	Try   int       `json:"try"`
	At    time.Time `json:"at"`
	// Keys are the tasks of a graph that passed the checks.
	Keys []string `json:"keys,omitempty"`
	// Problem is why the graph was refused: its check's message (a cycle
	// named: tasks a → b → a form a cycle).
	Problem string `json:"problem,omitempty"`
	// Rejected is the admins' rejection of the graph, with their note,
	// which went back to the planner.
	Rejected string `json:"rejected,omitempty"`
}

// Overlap is a file set two tasks' branches both change.
type Overlap struct {
	With  string   `json:"with"`
	Files []string `json:"files"`
}

// State is a goal's state, as its workflow's QueryState returns it.
type State struct {
	Goal   Goal   `json:"goal"`
	Status Status `json:"status"`
	// Target is the branch the tasks start from and go to, resolved at
	// the start.
	Target string `json:"target"`
	// Digest is the digest of the graph the plan decision approved.
	Digest  string             `json:"digest,omitempty"`
	Pending *decision.Decision `json:"pending,omitempty"`
	// Approval is how the graph was approved.
	Approval *decision.Outcome `json:"approval,omitempty"`
	// Planned says the planner proposed the graph; Proposals are the
	// graphs it proposed, in order.
	Planned   bool        `json:"planned,omitempty"`
	Proposals []Proposal  `json:"proposals,omitempty"`
	Tasks     []TaskState `json:"tasks"`
	// Queue is the keys of the goal's tasks in the target's merge queue,
	// in its order: the one merging, then the queued by when they
	// entered. Tasks of other goals on the same target queue with them.
	Queue     []string  `json:"queue,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}
