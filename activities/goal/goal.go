// Package goal holds the side effects of a goal's workflow: its target's
// head, its tasks' branches and starts, the wait for a task's end, the
// files a task's branch changes, its SSOT records, and the planner's
// graph.
package goal

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// Tasks starts tasks and waits for their ends: the task client
// (*workflows.Client, wrapped by the worker).
type Tasks interface {
	// StartNext starts a task under the year's next free id; a start
	// under a RequestKey used before answers with that start's task.
	StartNext(ctx context.Context, in task.Input, year int) (string, error)
	// Wait blocks until task taskID ends and returns how it ended.
	Wait(ctx context.Context, taskID string) (task.Result, error)
	// Steer tells a task of a message for its agent, in the store.
	Steer(ctx context.Context, taskID string, in task.SteerInput) error
}

// Store is what a goal writes in the SSOT (*ssot.DB).
type Store interface {
	Append(ctx context.Context, subject string, entries []ssot.Entry) (ssot.AppendResult, error)
	SaveDecisions(ctx context.Context, subject string, rev int64, ds []ssot.PendingDecision) error
	AddTaskMessage(ctx context.Context, m ssot.TaskMessage) (ssot.TaskMessage, error)
	TaskMessages(ctx context.Context, taskID string) ([]ssot.TaskMessage, error)
}

// Goal carries the dependencies of the goal's activities.
type Goal struct {
	Git *activities.Git
	// Pusher reads a target on the tasks' push remote (StartTaskInput's
	// Remote); nil: this worker delivers nothing.
	Pusher *activities.Pusher
	Tasks  Tasks
	Store  Store
	// Planner runs the goals' planner; nil: this worker has none.
	Planner Planner
	Now     func() time.Time
}

// TargetInput is a goal's repository and target branch.
type TargetInput struct {
	Repo   string `json:"repo"`
	Target string `json:"target,omitempty"`
}

// TargetResult is the target branch, resolved, and its head.
type TargetResult struct {
	Target string `json:"target"`
	Head   string `json:"head"`
}

// GoalTarget resolves a goal's target: the branch named, or the
// repository's default branch.
func (g *Goal) GoalTarget(ctx context.Context, in TargetInput) (TargetResult, error) {
	out, err := g.Git.BranchFrom(ctx, activities.BranchFromInput{Repo: in.Repo, From: in.Target})
	if err != nil {
		return TargetResult{}, err
	}
	return TargetResult{Target: out.From, Head: out.FromHead}, nil
}

// StartTaskInput is one task of a goal to start.
type StartTaskInput struct {
	GoalID string `json:"goal_id"`
	Key    string `json:"key"`
	// Attempt counts the task's earlier starts in the goal (an admin's
	// retry starts it again as a new task).
	Attempt int `json:"attempt,omitempty"`
	// Target is the branch the task's branch is made from, at its head.
	Target string `json:"target"`
	// Remote says the task delivers to the repository's push remote and
	// its merge queue moves the target there: the branch is made at the
	// target's head on that remote.
	Remote bool       `json:"remote,omitempty"`
	Input  task.Input `json:"input"`
}

// StartTaskResult is the started task.
type StartTaskResult struct {
	TaskID string `json:"task_id"`
	// Base is the target's head the task's branch was made at (or its
	// own head, when the branch was there already).
	Base string `json:"base"`
}

// GoalStartTask makes the task's branch at the target's head unless it
// exists (the head on the push remote, with Remote), then starts the
// task. A retry starts no second task: the start carries a request key
// of the goal and the task's key.
func (g *Goal) GoalStartTask(ctx context.Context, in StartTaskInput) (StartTaskResult, error) {
	bin := activities.BranchFromInput{Repo: in.Input.Plan.Repo, Branch: in.Input.Plan.Branch, From: in.Target}
	branchFrom := g.Git.BranchFrom
	if in.Remote && !amp.RepoIsURL(bin.Repo) { // a URL's mirror is fetched by BranchFrom
		if g.Pusher == nil {
			return StartTaskResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("starting task %s of goal %s: its target is on the push remote, and this worker pushes nothing", in.Key, in.GoalID),
				activities.ErrDeliveryConfig, nil)
		}
		branchFrom = g.Pusher.BranchFromRemote
	}
	b, err := branchFrom(ctx, bin)
	if err != nil {
		return StartTaskResult{}, err
	}
	ti := in.Input
	ti.RequestKey = RequestKey(in.GoalID, in.Key, in.Attempt)
	id, err := g.Tasks.StartNext(ctx, ti, g.now().Year())
	if err != nil {
		var te *task.Error
		if errors.As(err, &te) && te.Code != task.CodeInternal && te.Code != task.CodeUnavailable {
			return StartTaskResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTaskStart, nil)
		}
		return StartTaskResult{}, fmt.Errorf("starting task %s of goal %s: %w", in.Key, in.GoalID, err)
	}
	return StartTaskResult{TaskID: id, Base: b.Head}, nil
}

// ErrTaskStart is the failure type of a task start refused for good.
const ErrTaskStart = "GoalTaskStart"

// RequestKey is the request key a goal's task is started under: the
// same goal, key and attempt start one task.
func RequestKey(goalID, key string, attempt int) string {
	return fmt.Sprintf("goal\x00%s/%s#%d", goalID, key, attempt)
}

// AwaitTaskInput names a task to wait for.
type AwaitTaskInput struct {
	TaskID string `json:"task_id"`
}

// AwaitTask waits until a task ends and returns its result, heartbeating
// while it waits.
func (g *Goal) AwaitTask(ctx context.Context, in AwaitTaskInput) (task.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	r, err := g.Tasks.Wait(ctx, in.TaskID)
	if err != nil {
		return task.Result{}, fmt.Errorf("waiting for task %s: %w", in.TaskID, err)
	}
	return r, nil
}

// ChangedFilesInput names branches of one repository to compare with
// their target.
type ChangedFilesInput struct {
	Repo     string   `json:"repo"`
	Target   string   `json:"target"`
	Branches []string `json:"branches"`
}

// ChangedFilesResult lists the files each branch changes, by branch; a
// branch git cannot compare is left out.
type ChangedFilesResult struct {
	Files map[string][]string `json:"files"`
}

// MaxChangedFiles bounds the files read of one branch.
const MaxChangedFiles = 500

// ChangedFiles lists the files each branch changes since it left target
// (git diff --name-only target...branch), sorted, at most
// MaxChangedFiles a branch.
func (g *Goal) ChangedFiles(ctx context.Context, in ChangedFilesInput) (ChangedFilesResult, error) {
	repo, err := g.Git.Local(ctx, in.Repo, false)
	if err != nil {
		return ChangedFilesResult{}, err
	}
	bin := g.Git.Bin
	if bin == "" {
		bin = "git"
	}
	res := ChangedFilesResult{Files: map[string][]string{}}
	for _, b := range in.Branches {
		out, err := activities.RunGit(ctx, bin, repo, false, "diff", "--name-only", "--no-renames", in.Target+"..."+b, "--")
		if err != nil {
			if ctx.Err() != nil {
				return ChangedFilesResult{}, ctx.Err()
			}
			continue
		}
		files := []string{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" && len(files) < MaxChangedFiles {
				files = append(files, l)
			}
		}
		sort.Strings(files)
		res.Files[b] = files
	}
	return res, nil
}

// TellTaskInput is a message from a goal to one of its tasks' agents.
type TellTaskInput struct {
	TaskID string `json:"task_id"`
	// From names the sender: "goal G-…".
	From string `json:"from"`
	Text string `json:"text"`
}

// GoalTellTask writes a message for a task's agent, as ampflow task say
// does, and tells the task: it is in the task's timeline, and a runner's
// agent gets it. The same message written before is not written again.
func (g *Goal) GoalTellTask(ctx context.Context, in TellTaskInput) error {
	prior, err := g.Store.TaskMessages(ctx, in.TaskID)
	if err != nil {
		return err
	}
	var m ssot.TaskMessage
	for _, p := range prior {
		if p.Sender == in.From && p.Text == in.Text {
			m = p
		}
	}
	if m.ID == 0 {
		if m, err = g.Store.AddTaskMessage(ctx, ssot.TaskMessage{TaskID: in.TaskID, Kind: ssot.TaskMessageSay, Sender: in.From,
			Text: in.Text, CreatedAt: g.now()}); err != nil {
			return err
		}
	}
	return g.Tasks.Steer(ctx, in.TaskID, task.SteerInput{ID: m.ID, By: in.From})
}

// RecordInput is SSOT records of one goal.
type RecordInput struct {
	// Subject is the goal's workflow id: its chain in the SSOT.
	Subject string                   `json:"subject"`
	Entries []activities.RecordEntry `json:"entries"`
}

// GoalRecord appends records to a goal's chain; a retry keeps what was
// stored.
func (g *Goal) GoalRecord(ctx context.Context, in RecordInput) error {
	_, err := g.Store.Append(ctx, in.Subject, activities.StoreEntries(in.Entries))
	return err
}

// DecisionsInput is the open decisions of a goal, in their Rev'th save.
type DecisionsInput struct {
	Subject   string                 `json:"subject"`
	Rev       int64                  `json:"rev"`
	Decisions []ssot.PendingDecision `json:"decisions"`
}

// GoalDecisions lists a goal's open decisions with every other, so
// GET /v1/decisions and ampflow decide find them.
func (g *Goal) GoalDecisions(ctx context.Context, in DecisionsInput) error {
	return g.Store.SaveDecisions(ctx, in.Subject, in.Rev, in.Decisions)
}

func (g *Goal) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}
