package aof

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// AgentReviewType is the workflow type of an AOF task's review by the AMP
// reviewer agent (aof.review: agent).
const AgentReviewType = "AOFAgentReview"

// MaxAgentReviews bounds the agent reviews of one task; the reviews past
// it go to the admins.
const MaxAgentReviews = 999

// AgentReviewer says where the AOF agents' work is, for the reviewer
// agent (aof.repo, aof.branch). An Input without one is reviewed by the
// admins.
type AgentReviewer struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
}

// AgentReviewID is the AMP task id of an AOF task's round-th agent
// review: the AOF id's digits, then the round. TASK-2026-02-09-057's
// first is T-2026-0209057001, a number AMP's own ids, counted from 001
// each year, do not reach.
func AgentReviewID(aofTaskID string, round int) string {
	d := strings.Split(strings.TrimPrefix(aofTaskID, "TASK-"), "-")
	if len(d) != 4 {
		return ""
	}
	return fmt.Sprintf("T-%s-%s%s%s%03d", d[0], d[1], d[2], d[3], round)
}

// AgentReviewInput is what an agent review shows the reviewer.
type AgentReviewInput struct {
	// ID is the review's AMP task id and workflow id.
	ID       string        `json:"id"`
	Round    int           `json:"round"`
	Task     Task          `json:"task"`
	Reviewer AgentReviewer `json:"reviewer"`
	// RejectCount is how many times the reviewer rejected the task's work
	// before; MaxRejects is the policy's bound on it.
	RejectCount int `json:"rejectCount"`
	MaxRejects  int `json:"maxRejects"`
	// LastVerdict is the msg_id of the previous round's verdict, if any.
	LastVerdict string `json:"lastVerdict,omitempty"`
	// AckTimeout and ReplyTimeout are the reviewer's deadlines: for its
	// ACK, then for its verdict, which each heartbeat puts off.
	AckTimeout   time.Duration `json:"ackTimeout"`
	ReplyTimeout time.Duration `json:"replyTimeout"`
}

// AgentVerdict is how an agent review ended: the reviewer's verdict, or
// why there is none.
type AgentVerdict struct {
	ID      string             `json:"id"`
	MsgID   string             `json:"msgId,omitempty"`
	Verdict *amp.ReviewVerdict `json:"verdict,omitempty"`
	// NoAnswer says why the reviewer gave no verdict; Stderr is a
	// command-mode reviewer's, when it failed.
	NoAnswer string `json:"noAnswer,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
}

// agentReview is the review's state: the AMP messages it sent and
// what the reviewer sent back.
type agentReview struct {
	in      AgentReviewInput
	request amp.Message
	started time.Time
	// seen maps each record taken to its submission id (msg_id and
	// digest), as the AMP task keeps them.
	seen  map[string]string
	ackID string
	// active is when the reviewer last showed life after its ACK: the
	// ACK, then each heartbeat.
	active  time.Time
	verdict *amp.Message
	// stopped says why the review ends without a verdict: the reviewer
	// escalated, its delivery failed, or it was cancelled.
	stopped, stderr string
	ended           bool
	// changes counts what the wait wakes for.
	changes int

	records []activities.RecordEntry
	// queued and saved count the records queued and saved so far: an
	// update answers once its records are saved, and is refused if a save
	// failed (saveErr) first.
	queued, saved int
	saveErr       error
	rev           int64
	// closed is set once the final save is done; events numbers the
	// review's event records.
	closed bool
	events int
}

// AgentReviewWorkflow puts an AOF task in review before the AMP reviewer
// agent as an AMP task of its own (the review's ID): it records the AOF
// task as a task_dispatch and its completion report as a task_result,
// sends the review_request, takes the reviewer's ACK, heartbeats,
// review_verdict or escalation as a task does, and returns the verdict,
// or why there is none, to the AOF task. However it ends, the request
// leaves the reviewer's inbox.
func AgentReviewWorkflow(ctx workflow.Context, in AgentReviewInput) (AgentVerdict, error) {
	r := &agentReview{in: in, seen: map[string]string{}, started: workflow.Now(ctx).UTC()}
	if err := r.setup(ctx); err != nil {
		return AgentVerdict{}, err
	}
	r.compose(ctx)
	out, err := r.review(ctx)
	r.ended = true
	r.changes++
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if uerr := workflow.UpsertTypedSearchAttributes(dctx, task.AttrStatus.ValueSet(string(task.StatusDone))); uerr != nil {
		workflow.GetLogger(ctx).Warn("marking the review done", "review", in.ID, "error", uerr)
	}
	serr := r.save(dctx)
	r.closed = true
	if serr != nil {
		return out, serr
	}
	// Each update answers once its records are saved.
	if werr := workflow.Await(dctx, func() bool { return workflow.AllHandlersFinished(dctx) }); werr != nil {
		return out, werr
	}
	return out, err
}

func (r *agentReview) setup(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, task.UpdateSubmit, r.submit,
		workflow.UpdateHandlerOptions{Validator: r.validateSubmit}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, task.UpdateCancel, r.cancel,
		workflow.UpdateHandlerOptions{Validator: r.validateCancel}); err != nil {
		return err
	}
	refuse := func(name string) error {
		return refusal.New(task.CodeUnexpected, "%s is the reviewer agent's review of AOF task %s: it takes no %s; act on the AOF task (/v1/aof/tasks/%s)",
			r.in.ID, r.in.Task.TaskID, name, r.in.Task.TaskID)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, task.UpdateDecide, func(workflow.Context, decision.Answer) (task.DecideResult, error) {
		return task.DecideResult{}, refuse(task.UpdateDecide)
	}, workflow.UpdateHandlerOptions{Validator: func(decision.Answer) error { return refuse(task.UpdateDecide) }}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, task.UpdateReplan, func(workflow.Context, task.ReplanInput) (task.ChangeResult, error) {
		return task.ChangeResult{}, refuse(task.UpdateReplan)
	}, workflow.UpdateHandlerOptions{Validator: func(task.ReplanInput) error { return refuse(task.UpdateReplan) }}); err != nil {
		return err
	}
	// The state an AMP task answers with, which the API's ACK by msg_id
	// (POST /v1/acks) reads the review_request from.
	if err := workflow.SetQueryHandler(ctx, task.QueryState, func() (task.State, error) {
		st := task.State{TaskID: r.in.ID, Status: task.StatusInReview, Risk: amp.RiskMedium, Repo: r.in.Reviewer.Repo,
			Branch: r.in.Reviewer.Branch, Description: "the reviewer agent's review of AOF task " + r.in.Task.TaskID, StartedAt: r.started}
		if r.finished() {
			st.Status = task.StatusDone
		} else if r.ackID == "" && r.request.MsgID != "" {
			st.Outbox = []amp.Message{r.request}
		}
		return st, nil
	}); err != nil {
		return err
	}
	beats := workflow.GetSignalChannel(ctx, task.SignalHeartbeat)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var hb task.HeartbeatInput
			beats.Receive(ctx, &hb)
			// Before its ACK the reviewer has until the ACK timeout. A
			// heartbeat only puts the deadline off: the wait works it
			// out again when its timer fires.
			if hb.From == amp.RoleReviewer && r.ackID != "" {
				r.active = workflow.Now(ctx).UTC()
			}
		}
	})
	return nil
}

// finished reports whether the review takes no more messages.
func (r *agentReview) finished() bool { return r.ended || r.verdict != nil || r.stopped != "" }

// compose records the AOF task as AMP messages of the review's task id
// and queues the review_request for the reviewer.
func (r *agentReview) compose(ctx workflow.Context) {
	t, id, now := r.in.Task, r.in.ID, r.started
	res := t.Result
	if res == nil {
		res = &RunResult{} // the task only asks with a report; this keeps a bug from failing the workflow
	}
	criteria := []string{"The task is done as its title and body describe: " + t.Title}
	if t.Handoff != nil && len(t.Handoff.AcceptanceCriteria) > 0 {
		criteria = t.Handoff.AcceptanceCriteria
	}
	desc := fmt.Sprintf("AOF task %s: %s", t.TaskID, t.Title)
	if t.Body != "" {
		desc += "\n\n" + t.Body
	}
	dispatch := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, id, now, &amp.TaskDispatch{
		Description:        desc,
		Repo:               r.in.Reviewer.Repo,
		Branch:             r.in.Reviewer.Branch,
		Subtasks:           []amp.Subtask{{SubtaskID: t.TaskID, Description: t.Title}},
		AcceptanceCriteria: criteria,
		RiskLevel:          amp.RiskMedium,
	})
	notes := []string{fmt.Sprintf("AOF completion.report of %s at %s: outcome %s, tests %d/%d passed (%d failed), summary %s",
		res.AgentID, res.CompletedAt, res.Outcome, res.Tests.Passed, res.Tests.Total, res.Tests.Failed, res.SummaryRef)}
	if res.Notes != "" {
		notes = append(notes, res.Notes)
	}
	result := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, id, now, &amp.TaskResult{
		SubtaskID:        t.TaskID,
		CompletionStatus: amp.StatusComplete,
		DiffSummary:      amp.DiffSummary{FilesChanged: append([]string{}, res.Deliverables...)},
		SelfAssessment:   amp.SelfAssessment{CriteriaMet: make([]*bool, len(criteria)), Notes: notes},
		WorkLog:          []amp.WorkLogEntry{},
	})
	diff := fmt.Sprintf("the branch %s in %s", r.in.Reviewer.Branch, r.in.Reviewer.Repo)
	if len(res.Deliverables) > 0 {
		diff += " (deliverables: " + strings.Join(res.Deliverables, ", ") + ")"
	}
	cn := fmt.Sprintf("This is the review of AOF task %s (GET /v1/aof/tasks/%s), round %d. Its task_dispatch and task_result "+
		"records are ampflow's AMP rendering of the AOF task and of its agent's completion.report, not messages an agent sent.",
		t.TaskID, t.TaskID, r.in.Round)
	if r.in.RejectCount >= 2 && r.in.MaxRejects > 0 {
		cn += fmt.Sprintf("\nLock is approaching: reject_count is %d; the admins take the review after %d rejections.", r.in.RejectCount, r.in.MaxRejects)
	}
	req := amp.NewMessage(amp.RoleCoordinator, amp.RoleReviewer, id, now, &amp.ReviewRequest{
		OriginalDispatchRef: dispatch.MsgID,
		TaskResultRef:       result.MsgID,
		ReviewScope:         amp.ScopeFull,
		DiffURL:             diff,
		RejectCount:         r.in.RejectCount,
		CoordinatorNotes:    cn,
	})
	sec := int(r.in.AckTimeout / time.Second)
	req.AckTimeoutSec = &sec
	req.ContextRef = []string{dispatch.MsgID, result.MsgID}
	if r.in.LastVerdict != "" {
		req.ContextRef = append(req.ContextRef, r.in.LastVerdict)
	}
	r.request = req
	for _, m := range []amp.Message{dispatch, result, req} {
		b, _ := json.Marshal(m)
		r.record(ctx, m.MsgID, ssot.KindMessage, b)
		r.seen[m.MsgID] = ""
	}
}

// record queues a record for the next save.
func (r *agentReview) record(ctx workflow.Context, id string, kind ssot.RecordKind, body []byte) {
	r.records = append(r.records, activities.RecordEntry{ID: id, Kind: kind, Body: body, RecordedAt: workflow.Now(ctx).UTC()})
	r.queued++
	r.changes++
}

// save writes the queued records and the reviewer's inbox: the
// review_request until the reviewer ACKs it or the review ends.
func (r *agentReview) save(ctx workflow.Context) error {
	r.rev++
	in := aofacts.AgentReviewSaveInput{Subject: r.in.ID, Rev: r.rev, Records: r.records, Outbox: []ssot.OutboxMessage{}}
	if !r.finished() && r.ackID == "" {
		body, _ := json.Marshal(r.request)
		in.Outbox = append(in.Outbox, ssot.OutboxMessage{MsgID: r.request.MsgID, TaskID: r.in.ID, Role: string(amp.RoleReviewer),
			Type: string(r.request.Type), SentAt: r.started, Body: body})
	}
	queued := r.queued
	r.records = nil
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	var acts *aofacts.AOF
	if err := workflow.ExecuteActivity(actx, acts.SaveAgentReview, in).Get(ctx, nil); err != nil {
		if r.saveErr == nil {
			r.saveErr = fmt.Errorf("saving the agent review %s: %w", r.in.ID, err)
		}
		return r.saveErr
	}
	if r.saveErr == nil {
		r.saved = max(r.saved, queued)
	}
	return nil
}

// awaitSaved returns once the records queued so far are saved, or
// refuses when a save failed first: nothing was kept.
func (r *agentReview) awaitSaved(ctx workflow.Context) error {
	queued := r.queued
	if err := workflow.Await(ctx, func() bool { return r.saved >= queued || r.saveErr != nil }); err != nil {
		return err
	}
	if r.saved < queued {
		return refusal.New(task.CodeUnavailable, "the review %s could not keep it: %v", r.in.ID, r.saveErr)
	}
	return nil
}

// review saves the request, hands it to the reviewer and waits for how
// the review ends.
func (r *agentReview) review(ctx workflow.Context) (AgentVerdict, error) {
	if err := r.save(ctx); err != nil {
		return AgentVerdict{ID: r.in.ID}, err
	}
	// A pull reviewer may have ACKed from its inbox during the save.
	if r.ackID == "" && !r.finished() {
		// A command-mode reviewer still running when the review ends is
		// stopped.
		dctx, stop := workflow.WithCancel(ctx)
		defer stop()
		r.deliver(dctx)
	}
	return r.wait(ctx)
}

// deliver hands the review_request to the reviewer as the worker's
// agents.reviewer says (a pull agent reads its inbox); a delivery that
// fails for good ends the review without a verdict.
func (r *agentReview) deliver(ctx workflow.Context) {
	var acts *activities.Activities
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflows.DeliverOptions()), acts.Deliver,
		activities.DeliverInput{Message: r.request, Repo: r.in.Reviewer.Repo})
	workflow.Go(ctx, func(ctx workflow.Context) {
		err := f.Get(ctx, nil)
		if err == nil || temporal.IsCanceledError(err) || r.finished() {
			return
		}
		summary, stderr := workflows.DeliveryError(err)
		r.stopped, r.stderr = "delivering the review_request failed: "+summary, stderr
		r.changes++
	})
}

// wait waits for how the review ends: the reviewer's verdict, its
// escalation, a failed delivery, a cancel, or a deadline: the ACK within
// AckTimeout of the request, then the verdict within ReplyTimeout of the
// ACK or the reviewer's last heartbeat. Records taken meanwhile are
// saved as they come.
func (r *agentReview) wait(ctx workflow.Context) (AgentVerdict, error) {
	out := AgentVerdict{ID: r.in.ID}
	for {
		if len(r.records) > 0 {
			if err := r.save(ctx); err != nil {
				return out, err
			}
			continue
		}
		switch {
		case r.verdict != nil:
			out.MsgID, out.Verdict = r.verdict.MsgID, r.verdict.Verdict()
			return out, nil
		case r.stopped != "":
			out.NoAnswer, out.Stderr = r.stopped, r.stderr
			return out, nil
		}
		deadline, why := r.deadline()
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			out.NoAnswer = why
			return out, nil
		}
		mark := r.changes
		if _, err := workflow.AwaitWithTimeout(ctx, left, func() bool { return r.changes != mark }); err != nil {
			return out, err
		}
	}
}

// deadline is when the review gives up on the reviewer, and why.
func (r *agentReview) deadline() (time.Time, string) {
	if r.ackID == "" {
		return r.started.Add(r.in.AckTimeout), fmt.Sprintf("the reviewer agent did not ACK %s within %s (protocol.ack_timeout.review_request)",
			r.request.MsgID, task.FormatDuration(r.in.AckTimeout))
	}
	return r.active.Add(r.in.ReplyTimeout), fmt.Sprintf("the reviewer agent sent no review_verdict within %s of its ACK or last heartbeat (protocol.heartbeat_timeout)",
		task.FormatDuration(r.in.ReplyTimeout))
}
