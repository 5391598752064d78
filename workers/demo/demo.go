// Package demo plays a scripted executor and reviewer through one task of
// a running ampflow, narrating each step: the whole loop of dispatch, ACK,
// result, review, rejection, fix and approval, on a throwaway git
// repository, in well under a minute.
//
// It reaches the task only through workflows.Tasks, as real pull-mode
// agents do, so it works against any ampflow whose worker can run git on
// this machine's temporary directory.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// Options for Run.
type Options struct {
	// Tasks is the way in to the task workflows.
	Tasks workflows.Tasks
	// Out receives the narration, or with JSON the steps as one JSON
	// array at the end. Nil discards.
	Out  io.Writer
	JSON bool
	// Poll spaces the reads of inboxes and state; zero means 250ms.
	Poll time.Duration
	// Now is the clock of msg_ids and steps; nil is time.Now.
	Now func() time.Time
	// RepoDir is where the throwaway repository is created; it must be
	// missing or empty. Empty means a new temporary directory.
	RepoDir string
	// Dashboard is the dashboard's URL (the API's, without a trailing
	// slash), named when the task waits for an admin; empty when the
	// dashboard is off.
	Dashboard string
}

// Step is one thing an actor of the demo did.
type Step struct {
	At     time.Time `json:"at"`
	Role   amp.Role  `json:"role"`
	Action string    `json:"action"`
	MsgID  string    `json:"msg_id"`
	// Status is the task's status when the step was taken, as the
	// workflow last reported it; the task moves on right after.
	Status task.Status `json:"status"`
}

// Summary is how the demo's task ended.
type Summary struct {
	TaskID      string      `json:"task_id"`
	Repo        string      `json:"repo"`
	Status      task.Status `json:"status"`
	Rounds      int         `json:"rounds"`
	RejectCount int         `json:"reject_count"`
	// MsgIDs are the task's messages in the order of its timeline.
	MsgIDs []string `json:"msg_ids"`
	Steps  []Step   `json:"steps"`
}

// run is one demo: its options, its task and what happened so far.
type run struct {
	o      Options
	repo   repo
	taskID string
	status task.Status
	taken  map[string]bool
	steps  []Step
	last   time.Time
	// asked holds the ids of the decisions the demo said it waits for.
	asked map[string]bool
}

// Run creates a throwaway repository, starts a low-risk task on it and
// plays its executor and reviewer to the end: a first result, a rejection
// with one critical issue, a fix, an approval. It returns when the task is
// done, or with an error naming the step that failed or did not happen
// before ctx ended (a *TimeoutError).
func Run(ctx context.Context, o Options) (Summary, error) {
	if o.Tasks == nil {
		return Summary{}, errors.New("demo: no task client")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Dashboard = strings.TrimSuffix(o.Dashboard, "/")
	r := &run{o: o, taken: map[string]bool{}, asked: map[string]bool{}}
	sum, err := r.play(ctx)
	sum.Steps = r.steps
	if o.JSON {
		steps := r.steps
		if steps == nil {
			steps = []Step{}
		}
		enc := json.NewEncoder(o.Out)
		enc.SetEscapeHTML(false)
		if jerr := enc.Encode(steps); jerr != nil && err == nil {
			err = fmt.Errorf("writing the demo's steps: %w", jerr)
		}
	}
	return sum, err
}

func (r *run) play(ctx context.Context) (Summary, error) {
	var err error
	if r.repo, err = newRepo(ctx, r.o.RepoDir); err != nil {
		if ctx.Err() != nil {
			return Summary{}, r.timeout("the demo repository to be created", err)
		}
		return Summary{}, err
	}
	r.say("demo repository %s (%s, with %s checked out)", r.repo.dir, BaseBranch, FeatureBranch)
	if err := r.start(ctx); err != nil {
		return Summary{}, err
	}
	sum := Summary{TaskID: r.taskID, Repo: r.repo.dir}
	dispatch, err := r.awaitMessage(ctx, "the task_dispatch in the executor's inbox", amp.RoleExecutor, amp.TypeTaskDispatch)
	if err != nil {
		return sum, err
	}
	r.planApproved(ctx)
	if err := r.ack(ctx, amp.RoleExecutor, dispatch); err != nil {
		return sum, err
	}
	if err := r.executorDelivers(ctx, dispatch, firstScript, "Add hello.sh", 1); err != nil {
		return sum, err
	}
	if err := r.reviewerAnswers(ctx, "the review_request in the reviewer's inbox", rejection); err != nil {
		return sum, err
	}
	redispatch, err := r.executorTakes(ctx, "the redispatch in the executor's inbox")
	if err != nil {
		return sum, err
	}
	r.showFix(dispatch.Dispatch().Description, redispatch.Dispatch().Description)
	if err := r.executorDelivers(ctx, redispatch, fixedScript, "hello.sh: greet the world when given no name", 2); err != nil {
		return sum, err
	}
	if err := r.reviewerAnswers(ctx, "the incremental review_request in the reviewer's inbox", approval); err != nil {
		return sum, err
	}
	st, err := r.awaitStatus(ctx, "the task to be done", task.StatusDone)
	if err != nil {
		return sum, err
	}
	r.status = st.Status
	r.step(amp.RoleCoordinator, "done", "", "every subtask approved by review")
	sum.Status, sum.Rounds, sum.RejectCount = st.Status, st.Rounds, st.RejectCount
	sum.MsgIDs = []string{}
	for _, e := range st.Timeline {
		if e.Kind == "message" && e.MsgID != "" {
			sum.MsgIDs = append(sum.MsgIDs, e.MsgID)
		}
	}
	r.report(sum)
	return sum, nil
}

// start starts the low-risk, one-subtask task under the next free id.
func (r *run) start(ctx context.Context) error {
	now := r.o.Now()
	in := task.Input{Plan: plan(r.repo.dir), Coordinator: "ampflow demo"}
	id, err := r.o.Tasks.StartNext(ctx, in, now.Year())
	if err != nil && ctx.Err() != nil {
		return r.timeout("the demo task to start", err)
	}
	if err != nil {
		return fmt.Errorf("starting the demo task: %w", err)
	}
	r.taskID, r.status = id, task.StatusAwaitingApproval
	r.step(amp.RoleCoordinator, "started "+id, "", "low risk, 1 subtask")
	return nil
}

// executorTakes waits for a dispatch of the current subtask and ACKs it.
func (r *run) executorTakes(ctx context.Context, step string) (amp.Message, error) {
	m, err := r.awaitMessage(ctx, step, amp.RoleExecutor, amp.TypeTaskDispatch)
	if err != nil {
		return m, err
	}
	if err := r.ack(ctx, amp.RoleExecutor, m); err != nil {
		return m, err
	}
	return m, nil
}

// executorDelivers commits content to hello.sh and reports the commit.
func (r *run) executorDelivers(ctx context.Context, dispatch amp.Message, content, message string, round int) error {
	var diff amp.DiffSummary
	commit, err := r.repo.commitFile(ctx, scriptFile, content, message)
	if err == nil {
		diff, err = r.repo.diffSummary(ctx)
	}
	if err != nil && ctx.Err() != nil {
		return r.timeout(fmt.Sprintf("the executor's commit of round %d", round), err)
	}
	if err != nil {
		return fmt.Errorf("executor committing round %d: %w", round, err)
	}
	r.step(amp.RoleExecutor, "commit "+shortHash(commit), "", fmt.Sprintf("on %s, %s since %s", FeatureBranch, describeDiff(diff), BaseBranch))
	m := result(r.taskID, r.stamp(), commit, diff, round)
	m.ContextRef = []string{dispatch.MsgID}
	return r.send(ctx, amp.RoleExecutor, "the executor's task_result being taken", m, "complete, "+describeDiff(diff))
}

// reviewerAnswers waits for a review request, ACKs it and sends verdict.
func (r *run) reviewerAnswers(ctx context.Context, step string, verdict func(string, time.Time) amp.Message) error {
	req, err := r.awaitMessage(ctx, step, amp.RoleReviewer, amp.TypeReviewRequest)
	if err != nil {
		return err
	}
	if err := r.ack(ctx, amp.RoleReviewer, req); err != nil {
		return err
	}
	m := verdict(r.taskID, r.stamp())
	m.ContextRef = []string{req.MsgID}
	return r.send(ctx, amp.RoleReviewer, "the reviewer's review_verdict being taken", m, describeVerdict(m.Verdict()))
}

func (r *run) ack(ctx context.Context, role amp.Role, m amp.Message) error {
	step := fmt.Sprintf("the %s's ACK of %s being taken", role, m.MsgID)
	res, err := r.submitting(ctx, step, func(ctx context.Context) (task.SubmitResult, error) {
		return r.o.Tasks.Ack(ctx, m.MsgID, role)
	})
	if err != nil {
		return err
	}
	r.status = res.Status
	note := ""
	if req := m.Request(); req != nil {
		note = fmt.Sprintf("%s review, reject_count %d", req.ReviewScope, req.RejectCount)
	}
	r.step(role, "ACK", m.MsgID, note)
	return nil
}

func (r *run) send(ctx context.Context, role amp.Role, step string, m amp.Message, note string) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", m.MsgID, err)
	}
	res, err := r.submitting(ctx, step, func(ctx context.Context) (task.SubmitResult, error) {
		return r.o.Tasks.Submit(ctx, raw)
	})
	if err != nil {
		return err
	}
	r.status = res.Status
	r.step(role, "send "+string(m.Type), m.MsgID, note)
	return nil
}

// stamp is the time of a new message: the clock, moved past the last
// stamp so that two messages never share a msg_id.
func (r *run) stamp() time.Time {
	now := r.o.Now()
	if !now.After(r.last) {
		now = r.last.Add(time.Millisecond)
	}
	r.last = now
	return now
}

// showFix prints what the redispatch adds to the first dispatch: the
// reviewer's issues, as the workflow passes them on.
func (r *run) showFix(first, again string) {
	fix := strings.TrimSpace(strings.TrimPrefix(again, first))
	if r.o.JSON || fix == "" {
		return
	}
	for _, line := range strings.Split(fix, "\n") {
		fmt.Fprintf(r.o.Out, "  %-11s | %s\n", "", line)
	}
}
