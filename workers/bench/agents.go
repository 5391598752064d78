package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// inboxes is the activities.Deliverer of the benchmark: each delivered
// message goes to the channel of its task's in-process agent. Messages of
// tasks without an inbox are dropped, as a pull-mode agent that never
// reads would leave them.
type inboxes struct {
	m sync.Map // task id → chan amp.Message
}

var _ activities.Deliverer = (*inboxes)(nil)

// inboxSize holds a task's two deliveries and a few redeliveries, so the
// activity never waits on a slow agent.
const inboxSize = 8

func (x *inboxes) open(taskID string) chan amp.Message {
	ch := make(chan amp.Message, inboxSize)
	x.m.Store(taskID, ch)
	return ch
}

func (x *inboxes) close(taskID string) { x.m.Delete(taskID) }

// Deliver implements activities.Deliverer.
func (x *inboxes) Deliver(ctx context.Context, in activities.DeliverInput) (activities.DeliverResult, error) {
	v, ok := x.m.Load(in.Message.TaskID)
	if !ok {
		return activities.DeliverResult{Mode: "bench"}, nil
	}
	select {
	case v.(chan amp.Message) <- in.Message:
		return activities.DeliverResult{Mode: "bench"}, nil
	case <-ctx.Done():
		return activities.DeliverResult{}, fmt.Errorf("delivering %s in-process: %w", in.Message.MsgID, ctx.Err())
	}
}

// agent plays the executor and the reviewer of one task.
type agent struct {
	tasks  *workflows.Client
	taskID string
	inbox  chan amp.Message
	lat    *latencies // nil: latencies are not kept
	// retries, when set, counts the submits sent again after the server
	// failed the workflow task that held them (lostUpdate); nil: such a
	// submit fails.
	retries *atomic.Int64
	last    time.Time
}

// Acceptance criteria of every benchmark task; the result and the verdict
// answer each.
var criteria = []string{"bench.txt lists three lines"}

// plan is the plan of a benchmark task on branch (repo.branch).
func plan(r repo, branch string) amp.TaskDispatch {
	return amp.TaskDispatch{
		Description: "Add bench.txt",
		Repo:        r.dir,
		Branch:      branch,
		Subtasks: []amp.Subtask{{
			SubtaskID: "S1", Description: "Write bench.txt with three lines", EstimatedLines: 3,
		}},
		AcceptanceCriteria: criteria,
		RiskLevel:          amp.RiskLow,
		ForbiddenActions:   []string{"push"},
	}
}

// await returns the next message of type t; redeliveries of earlier
// messages are skipped.
func (a *agent) await(ctx context.Context, t amp.Type) (amp.Message, error) {
	for {
		select {
		case m := <-a.inbox:
			if m.Type == t {
				return m, nil
			}
		case <-ctx.Done():
			return amp.Message{}, fmt.Errorf("task %s: waiting for a %s: %w", a.taskID, t, ctx.Err())
		}
	}
}

// stamp is the time of a new record: now, but past the last one and past
// the message answered, so that no msg_id is ever used twice in a task
// even when the clock has not moved on a millisecond.
func (a *agent) stamp(after amp.Message) time.Time {
	at := time.Now()
	floor := a.last
	if i := strings.LastIndexByte(after.MsgID, '-'); i >= 0 {
		if n, err := strconv.ParseInt(after.MsgID[i+1:], 10, 64); err == nil {
			if t := time.UnixMilli(n); t.After(floor) {
				floor = t
			}
		}
	}
	if at.UnixMilli() <= floor.UnixMilli() {
		at = time.UnixMilli(floor.UnixMilli() + 1)
	}
	a.last = at
	return at
}

// submit sends one record and keeps how long it took to be accepted.
func (a *agent) submit(ctx context.Context, rec any) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("task %s: encoding a record: %w", a.taskID, err)
	}
	began := time.Now()
	_, err = a.tasks.Submit(ctx, raw)
	took := time.Since(began)
	for n := 0; err != nil && a.retries != nil && n < maxSubmitRetries && lostUpdate(err); n++ {
		a.retries.Add(1)
		_, err = a.tasks.Submit(ctx, raw)
	}
	if err != nil {
		return fmt.Errorf("task %s: submitting: %w", a.taskID, err)
	}
	if a.lat != nil {
		a.lat.add(took)
	}
	return nil
}

// maxSubmitRetries bounds the times one submit is sent again.
const maxSubmitRetries = 5

// lostUpdate reports whether err is the server's answer to an update
// whose workflow task failed because another event came in while it ran
// (UnhandledCommand: here, the executor's Deliver activity completing as
// the reviewer's ACK arrives). The update was not applied, and sending it
// again under the same update id is safe.
func lostUpdate(err error) bool {
	return strings.Contains(err.Error(), "unexpected workflow task failure")
}

// takeDispatch waits for the dispatch and ACKs it.
func (a *agent) takeDispatch(ctx context.Context) (amp.Message, error) {
	d, err := a.await(ctx, amp.TypeTaskDispatch)
	if err != nil {
		return d, err
	}
	return d, a.submit(ctx, amp.NewAck(amp.RoleExecutor, d, a.stamp(d)))
}

// play runs the agents' part of a whole lifecycle: ACK the dispatch,
// report the repository's real commit and diff, ACK the review request,
// approve.
func (a *agent) play(ctx context.Context, r repo) error {
	d, err := a.takeDispatch(ctx)
	if err != nil {
		return err
	}
	yes := true
	at := a.stamp(d)
	res := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, a.taskID, at, &amp.TaskResult{
		SubtaskID:        "S1",
		CompletionStatus: amp.StatusComplete,
		DiffSummary:      r.diff,
		SelfAssessment:   amp.SelfAssessment{CriteriaMet: []*bool{&yes}, Notes: []string{"three lines"}},
		WorkLog:          []amp.WorkLogEntry{{Timestamp: at.Format(amp.TimestampLayout), Action: "commit", File: benchFile, Detail: "add three lines"}},
		CommitHash:       r.commit,
	})
	res.ContextRef = []string{d.MsgID}
	if err := a.submit(ctx, res); err != nil {
		return err
	}
	return a.review(ctx)
}

// review plays the reviewer: ACK the review request, approve.
func (a *agent) review(ctx context.Context) error {
	req, err := a.await(ctx, amp.TypeReviewRequest)
	if err != nil {
		return err
	}
	yes := true
	if err := a.submit(ctx, amp.NewAck(amp.RoleReviewer, req, a.stamp(req))); err != nil {
		return err
	}
	v := amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, a.taskID, a.stamp(req), &amp.ReviewVerdict{
		Decision:        amp.DecisionApproved,
		CriteriaResults: []amp.CriterionResult{{Criterion: criteria[0], Passed: &yes, Evidence: "wc -l bench.txt prints 3"}},
		Confidence:      0.95,
	})
	v.ContextRef = []string{req.MsgID}
	return a.submit(ctx, v)
}

// lifecycle starts a task on branch, which its agent made
// (repo.branch), and plays it to done.
func (b *bench) lifecycle(ctx context.Context, taskID, branch string, lat *latencies) error {
	a := &agent{tasks: b.tasks, taskID: taskID, inbox: b.inboxes.open(taskID), lat: lat}
	defer b.inboxes.close(taskID)
	if err := b.tasks.Start(ctx, task.Input{TaskID: taskID, Plan: plan(b.repo, branch), Coordinator: "ampflow bench", Policy: b.policy}); err != nil {
		return err
	}
	if err := a.play(ctx, b.repo); err != nil {
		return err
	}
	var out task.Result
	if err := b.temporal.GetWorkflow(ctx, task.WorkflowID(taskID), "").Get(ctx, &out); err != nil {
		return fmt.Errorf("task %s: waiting for the end: %w", taskID, err)
	}
	if out.Status != task.StatusDone {
		return fmt.Errorf("task %s ended %s, not done: %s", taskID, out.Status, out.Reason)
	}
	return nil
}

// checkSSOT makes sure the SSOT was written: a failed write does not stop
// a task, so without this check a broken store would go unnoticed and
// flatter the figures. It runs after the timed phase, for every task of
// it: reading the store back is the benchmark's work, not the task's.
func (b *bench) checkSSOT(taskIDs []string) error {
	for _, id := range taskIDs {
		if err := b.checkTask(id); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) checkTask(taskID string) error {
	row, err := b.store.Task(context.Background(), taskID)
	if err != nil {
		return fmt.Errorf("task %s: reading its SSOT snapshot: %w", taskID, err)
	}
	var st task.State
	if err := json.Unmarshal(row.State, &st); err != nil {
		return fmt.Errorf("task %s: decoding its SSOT snapshot: %w", taskID, err)
	}
	if st.Status != task.StatusDone || st.LastError != "" {
		return fmt.Errorf("task %s: the SSOT shows status %s, last error %q; want done without errors", taskID, st.Status, st.LastError)
	}
	return nil
}
