package aof

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/refusal"
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
	// NoAnswer says why the reviewer gave no verdict.
	NoAnswer string `json:"noAnswer,omitempty"`
}

// agentReview is the review's state: the AMP messages it sent and
// what the reviewer sent back.
type agentReview struct {
	in      AgentReviewInput
	request amp.Message
	seen    map[string]string // msg_id → digest of each record taken
	acked   bool
	beat    bool
	verdict *amp.Message
	failed  string
	ended   bool

	records []activities.RecordEntry
	rev     int64
	saved   int64
}

// AgentReviewWorkflow puts an AOF task in review before the AMP reviewer
// agent as an AMP task of its own (the review's ID): it records the AOF
// task as a task_dispatch and its completion report as a task_result,
// sends the review_request, takes the reviewer's ACK, heartbeats and
// review_verdict as a task does, and returns the verdict, or why there
// is none, to the AOF task.
func AgentReviewWorkflow(ctx workflow.Context, in AgentReviewInput) (AgentVerdict, error) {
	r := &agentReview{in: in, seen: map[string]string{}}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, task.UpdateSubmit, r.submit,
		workflow.UpdateHandlerOptions{Validator: r.validateSubmit}); err != nil {
		return AgentVerdict{}, err
	}
	for _, name := range []string{task.UpdateDecide, task.UpdateCancel, task.UpdateReplan} {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, name, func(workflow.Context, json.RawMessage) error { return nil },
			workflow.UpdateHandlerOptions{Validator: func(json.RawMessage) error { return r.refuseAdmin(name) }}); err != nil {
			return AgentVerdict{}, err
		}
	}
	// The state an AMP task answers with, which the API's ACK by msg_id
	// (POST /v1/acks) reads the review_request from.
	started := workflow.Now(ctx).UTC()
	if err := workflow.SetQueryHandler(ctx, task.QueryState, func() (task.State, error) {
		st := task.State{TaskID: in.ID, Status: task.StatusInReview, Risk: amp.RiskMedium, Repo: in.Reviewer.Repo,
			Branch: in.Reviewer.Branch, Description: "the reviewer agent's review of AOF task " + in.Task.TaskID, StartedAt: started}
		switch {
		case r.ended || r.verdict != nil:
			st.Status = task.StatusDone
		case r.request.MsgID != "":
			st.Outbox = []amp.Message{r.request}
		}
		return st, nil
	}); err != nil {
		return AgentVerdict{}, err
	}
	beats := workflow.GetSignalChannel(ctx, task.SignalHeartbeat)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var hb task.HeartbeatInput
			beats.Receive(ctx, &hb)
			if hb.From == amp.RoleReviewer {
				r.beat = true
			}
		}
	})

	r.compose(ctx)
	if err := r.save(ctx); err != nil {
		return AgentVerdict{}, err
	}
	r.deliver(ctx)
	out, err := r.wait(ctx)
	// The inbox is cleared however the review ends, cancelled included.
	r.ended = true
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if serr := r.save(dctx); serr != nil {
		return out, serr
	}
	// A verdict's update answers once its save is done.
	if werr := workflow.Await(dctx, func() bool { return workflow.AllHandlersFinished(dctx) }); werr != nil {
		return out, werr
	}
	return out, err
}

// compose records the AOF task as AMP messages of the review's task id
// and queues the review_request for the reviewer.
func (r *agentReview) compose(ctx workflow.Context) {
	t, id, now := r.in.Task, r.in.ID, workflow.Now(ctx).UTC()
	res := t.Result
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
	status := amp.StatusComplete
	blockers := res.Blockers
	if res.Outcome == OutcomePartial {
		status = amp.StatusPartial
		if len(blockers) == 0 {
			blockers = []string{"partial: " + strings.TrimSpace("the agent reported partial completion. "+res.Notes)}
		}
	}
	unknown := make([]*bool, len(criteria))
	notes := []string{fmt.Sprintf("AOF completion.report of %s at %s: outcome %s, tests %d/%d passed (%d failed), summary %s",
		res.AgentID, res.CompletedAt, res.Outcome, res.Tests.Passed, res.Tests.Total, res.Tests.Failed, res.SummaryRef)}
	if res.Notes != "" {
		notes = append(notes, res.Notes)
	}
	result := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, id, now, &amp.TaskResult{
		SubtaskID:        t.TaskID,
		CompletionStatus: status,
		DiffSummary:      amp.DiffSummary{FilesChanged: append([]string{}, res.Deliverables...)},
		SelfAssessment:   amp.SelfAssessment{CriteriaMet: unknown, Notes: notes},
		WorkLog:          []amp.WorkLogEntry{},
		Blockers:         blockers,
	})
	diff := fmt.Sprintf("the branch %s in %s", r.in.Reviewer.Branch, r.in.Reviewer.Repo)
	if len(res.Deliverables) > 0 {
		diff += " (deliverables: " + strings.Join(res.Deliverables, ", ") + ")"
	}
	req := amp.NewMessage(amp.RoleCoordinator, amp.RoleReviewer, id, now, &amp.ReviewRequest{
		OriginalDispatchRef: dispatch.MsgID,
		TaskResultRef:       result.MsgID,
		ReviewScope:         amp.ScopeFull,
		DiffURL:             diff,
		CoordinatorNotes: fmt.Sprintf("This is the review of AOF task %s (GET /v1/aof/tasks/%s), round %d. Its task_dispatch and task_result "+
			"records are ampflow's AMP rendering of the AOF task and of its agent's completion.report, not messages an agent sent.",
			t.TaskID, t.TaskID, r.in.Round),
	})
	sec := int(r.in.AckTimeout / time.Second)
	req.AckTimeoutSec = &sec
	req.ContextRef = []string{dispatch.MsgID, result.MsgID}
	r.request = req
	for _, m := range []amp.Message{dispatch, result, req} {
		r.record(ctx, m.MsgID, activities.KindMessage, m)
	}
}

func (r *agentReview) record(ctx workflow.Context, id string, kind activities.RecordKind, v any) {
	var b []byte
	switch raw := v.(type) {
	case json.RawMessage:
		b = raw
	default:
		b, _ = json.Marshal(v)
	}
	r.records = append(r.records, activities.RecordEntry{ID: id, Kind: kind, Body: b, RecordedAt: workflow.Now(ctx).UTC()})
	r.rev++
}

// save writes the queued records and the inbox: the review_request until
// the review ends.
func (r *agentReview) save(ctx workflow.Context) error {
	r.rev++
	in := activities.AgentReviewSaveInput{Subject: r.in.ID, Rev: r.rev, Records: r.records, Outbox: []ssot.OutboxMessage{}}
	if !r.ended && r.verdict == nil {
		body, _ := json.Marshal(r.request)
		in.Outbox = append(in.Outbox, ssot.OutboxMessage{MsgID: r.request.MsgID, TaskID: r.in.ID, Role: string(amp.RoleReviewer),
			Type: string(r.request.Type), SentAt: workflow.Now(ctx).UTC(), Body: body})
	}
	r.records = nil
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	var acts *activities.AOF
	if err := workflow.ExecuteActivity(actx, acts.SaveAgentReview, in).Get(ctx, nil); err != nil {
		return fmt.Errorf("saving the agent review %s: %w", r.in.ID, err)
	}
	r.saved = in.Rev
	return nil
}

// deliver hands the review_request to the reviewer as the worker's
// agents.reviewer says (a pull agent reads its inbox); a delivery that
// fails for good ends the review without a verdict.
func (r *agentReview) deliver(ctx workflow.Context) {
	actx := workflow.WithActivityOptions(ctx, workflows.DeliverOptions())
	var acts *activities.Activities
	f := workflow.ExecuteActivity(actx, acts.Deliver, activities.DeliverInput{Message: r.request, Repo: r.in.Reviewer.Repo})
	workflow.Go(ctx, func(ctx workflow.Context) {
		if err := f.Get(ctx, nil); err != nil && r.verdict == nil && ctx.Err() == nil {
			r.failed = "delivering the review_request failed: " + err.Error()
		}
	})
}

// wait waits for the verdict, with the reviewer's deadlines: its ACK
// within AckTimeout, then its verdict within ReplyTimeout of the ACK or
// of its last heartbeat. Records taken meanwhile are saved as they come.
func (r *agentReview) wait(ctx workflow.Context) (AgentVerdict, error) {
	out := AgentVerdict{ID: r.in.ID}
	deadline := workflow.Now(ctx).Add(r.in.AckTimeout)
	for {
		if len(r.records) > 0 {
			if err := r.save(ctx); err != nil {
				return out, err
			}
			continue
		}
		if r.verdict != nil {
			out.MsgID, out.Verdict = r.verdict.MsgID, r.verdict.Verdict()
			return out, nil
		}
		if r.failed != "" {
			out.NoAnswer = r.failed
			return out, nil
		}
		acked := r.acked
		left := deadline.Sub(workflow.Now(ctx))
		woke, err := workflow.AwaitWithTimeout(ctx, max(left, 0), func() bool {
			return len(r.records) > 0 || r.verdict != nil || r.failed != "" || r.beat || r.acked != acked
		})
		if err != nil {
			return out, err
		}
		switch {
		case r.beat || r.acked != acked:
			r.beat = false
			deadline = workflow.Now(ctx).Add(r.in.ReplyTimeout)
		case !woke && !r.acked:
			out.NoAnswer = fmt.Sprintf("the reviewer agent did not ACK %s within %s", r.request.MsgID, task.FormatDuration(r.in.AckTimeout))
			return out, nil
		case !woke:
			out.NoAnswer = fmt.Sprintf("the reviewer agent sent no review_verdict within %s of its ACK or last heartbeat", task.FormatDuration(r.in.ReplyTimeout))
			return out, nil
		}
	}
}

// digestOf tells a resend of a record from another record under its msg_id.
func digestOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

func (r *agentReview) refuseAdmin(name string) error {
	return refusal.New(task.CodeUnexpected, "%s is the reviewer agent's review of AOF task %s: it takes no %s; act on the AOF task (/v1/aof/tasks/%s)",
		r.in.ID, r.in.Task.TaskID, name, r.in.Task.TaskID)
}

// validateSubmit takes the reviewer's ACK of the review_request and its
// review_verdict; it refuses anything else before it enters history.
func (r *agentReview) validateSubmit(in task.SubmitInput) error {
	_, err := r.classify(in)
	return err
}

func (r *agentReview) classify(in task.SubmitInput) (rec amp.Record, err error) {
	rec, err = amp.ParseRecord(in.Raw)
	if err != nil {
		return rec, refusal.Record(err)
	}
	taskID, from := "", amp.Role("")
	if rec.Ack != nil {
		taskID, from = rec.Ack.TaskID, rec.Ack.From
	} else {
		taskID, from = rec.Message.TaskID, rec.Message.From
	}
	if taskID != r.in.ID {
		return rec, refusal.Field("task_id", "%s is not this review (%s)", taskID, r.in.ID)
	}
	if prev, ok := r.seen[rec.ID()]; ok {
		if prev != digestOf(in.Raw) {
			return rec, refusal.New(task.CodeConflict, "msg_id: %s was already used by a different message", rec.ID())
		}
		return rec, nil
	}
	if r.verdict != nil || r.ended {
		return rec, refusal.New(task.CodeFinished, "the review %s has its verdict: it takes no more messages", r.in.ID)
	}
	if from != amp.RoleReviewer {
		return rec, refusal.Field("from", "is %s: the review of an AOF task takes messages from the reviewer only", from)
	}
	switch {
	case rec.Ack != nil && rec.Ack.AckOf != r.request.MsgID:
		return rec, refusal.Field("ack_of", "%s is not this review's review_request (%s)", rec.Ack.AckOf, r.request.MsgID)
	case rec.Ack == nil && rec.Message.Type != amp.TypeReviewVerdict:
		return rec, refusal.New(task.CodeUnexpected, "unexpected %s: the review %s expects an ACK of %s and a review_verdict",
			rec.Message.Type, r.in.ID, r.request.MsgID)
	}
	return rec, nil
}

// submit keeps a record the validator let through and answers once it is
// saved.
func (r *agentReview) submit(ctx workflow.Context, in task.SubmitInput) (task.SubmitResult, error) {
	rec, err := r.classify(in)
	if err != nil {
		return task.SubmitResult{}, err
	}
	out := task.SubmitResult{MsgID: rec.ID(), Status: task.StatusInReview}
	if _, ok := r.seen[rec.ID()]; ok {
		out.Duplicate = true
		return out, nil
	}
	r.seen[rec.ID()] = digestOf(in.Raw)
	if rec.Ack != nil {
		r.record(ctx, rec.ID(), activities.KindAck, json.RawMessage(in.Raw))
		r.acked = true
	} else {
		m := *rec.Message
		r.record(ctx, m.MsgID, activities.KindMessage, json.RawMessage(in.Raw))
		ack := amp.NewAck(amp.RoleCoordinator, m, workflow.Now(ctx).UTC())
		r.record(ctx, ack.MsgID, activities.KindAck, ack)
		r.verdict = &m
	}
	rev := r.rev
	if err := workflow.Await(ctx, func() bool { return r.saved >= rev }); err != nil {
		return task.SubmitResult{}, err
	}
	return out, nil
}
