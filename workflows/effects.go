package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// acts is the typed nil pointer through which the workflow names its
// activities; the worker registers a real *activities.Activities.
var acts *activities.Activities

func gitOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: 30 * time.Second,
			MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{activities.ErrNotWorkTree, activities.ErrBranchMissing,
				activities.ErrProtectedBranch, activities.ErrCommitMissing},
		},
	}
}

// gitCheck starts a git check as a local activity: a check reads the
// worker's clone for a second or less, and a regular activity would cost
// it a round trip through the server, three history events and one more
// workflow task.
func (t *taskRun) gitCheck(ctx workflow.Context, fn, in any) workflow.Future {
	return t.holdRecords(workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, gitOptions()), fn, in))
}

// holdRecords keeps the record loop from starting a batch until f, a
// short local activity whose outcome the task records next, is done:
// what was queued before it rides in one batch with what follows, one
// store transaction and one local activity fewer. Nothing waits on the
// SSOT meanwhile: a message goes out only once the batch holding it is
// written (send).
func (t *taskRun) holdRecords(f workflow.Future) workflow.Future {
	t.holding = f
	return f
}

func ciOptions(p task.Policy) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		// A provider that keeps failing is the admins' problem after the
		// CI timeout, not a silent wait.
		ScheduleToCloseTimeout: p.CITimeout,
		StartToCloseTimeout:    p.CITimeout,
		HeartbeatTimeout:       time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrCIConfig, activities.ErrCommitMissing},
		},
	}
}

func recordOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		// Short: a worker that dies mid-write is noticed soon.
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        200 * time.Millisecond,
			MaximumInterval:        30 * time.Second,
			NonRetryableErrorTypes: []string{activities.ErrRecordConflict},
		},
	}
}

func notifyOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: time.Minute,
			MaximumAttempts: 10,
		},
	}
}

// DeliverHeartbeatTimeout is how long the Deliver activity may go
// without a heartbeat: a worker that dies with a run (and is not
// restarted, so nothing fails its attempt at once) is noticed after it,
// and another worker tries the run again within 30 s of the death. A live
// worker heartbeats every few seconds through the whole attempt
// (activities/delivery).
const DeliverHeartbeatTimeout = 20 * time.Second

// DeliverOptions are the options of the Deliver activity: command-mode
// agents run inside it, for up to two hours, and heartbeat.
func DeliverOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		// Command-mode agents run inside the activity; they heartbeat.
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    DeliverHeartbeatTimeout,
		// A stopped delivery is over when its worker says so, its CLI
		// gone, not when the stop is asked (stopDeliveries).
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{activities.ErrDelivery},
		},
	}
}

// localDeliverOptions bound a pull-mode or in-process hand-over.
func localDeliverOptions() workflow.LocalActivityOptions {
	o := DeliverOptions()
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         o.RetryPolicy,
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// record queues an SSOT entry; the record loop writes entries in order.
// The entry is stamped with the time it happened, now: not t.UpdatedAt,
// which may still be the time of what it answers (the message an ACK
// acknowledges, the decision an outcome closes).
func (t *taskRun) record(ctx workflow.Context, id string, kind ssot.RecordKind, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		t.log.Error("encoding SSOT record", "id", id, "error", err)
		return
	}
	t.Records = append(t.Records, queuedRecord{ID: id, Kind: string(kind), Body: b, RecordedAt: workflow.Now(ctx)})
	t.wake()
}

// recordMessage queues an outgoing or accepted message for the SSOT and
// the timeline.
func (t *taskRun) recordMessage(ctx workflow.Context, m amp.Message) {
	b, _ := json.Marshal(m)
	t.Seen[m.MsgID] = digest(b)
	t.MsgIDs = append(t.MsgIDs, m.MsgID)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "message", MsgID: m.MsgID, Type: string(m.Type), From: string(m.From), To: string(m.To)})
	t.Records = append(t.Records, queuedRecord{ID: m.MsgID, Kind: string(ssot.KindMessage), Body: b, RecordedAt: t.UpdatedAt})
	t.wake()
}

// snapshot queues the task's current state for the SSOT's read side.
func (t *taskRun) snapshot() {
	t.Records = append(t.Records, queuedRecord{Kind: snapshotKind})
	t.wake()
}

// wake starts the record or notice loop for queued work. Before setup it
// does nothing: setup wakes them for what was queued before it.
func (t *taskRun) wake() {
	if t.effects == nil {
		return
	}
	if (len(t.Records) > 0 || t.release != nil) && !t.recording {
		t.recording = true
		workflow.Go(t.effects, t.recordLoop)
	}
	if len(t.Notices) > 0 && !t.noticing {
		t.noticing = true
		workflow.Go(t.effects, t.noticeLoop)
	}
}

// snapshotKind marks a queue slot that writes the task's state instead of a record.
const snapshotKind = "snapshot"

// recordLoop writes queued SSOT entries in order, batching what has
// queued up meanwhile, with the task's state alongside and the release
// of a direct branch lease as the task ends. It writes in a
// local activity: a regular one cost every batch three history events, a
// round trip through matching and usually one more workflow task, and
// `ampflow bench` finishes about 45% more lifecycles a second without
// them (BENCHMARKS.md). The Store is idempotent, so a local activity run
// again after a lost workflow task writes nothing twice.
func (t *taskRun) recordLoop(ctx workflow.Context) {
	ctx = workflow.WithLocalActivityOptions(ctx, recordOptions())
	var retry time.Duration
	for {
		// The batch is cut a dispatcher pass later: a coroutine woken with
		// the loop (the run loop, by an agent's reply a handler took)
		// queues what it records and holds the loop first.
		passed := false
		if err := workflow.Await(ctx, func() bool {
			if !passed {
				passed = true
				return false
			}
			return t.holding == nil || t.holding.IsReady()
		}); err != nil {
			t.recording = false
			return
		}
		if len(t.Records) == 0 && t.release == nil {
			t.recording = false
			return
		}
		n := len(t.Records)
		in := activities.RecordInput{TaskID: t.In.TaskID, Release: t.release}
		for _, e := range t.Records[:n] {
			if e.Kind != snapshotKind {
				in.Entries = append(in.Entries, e.entry())
			}
		}
		view, _ := json.Marshal(t.view())
		in.Task = view
		t.RecordRev++
		in.Rev = t.RecordRev
		var out activities.RecordResult
		err := workflow.ExecuteLocalActivity(ctx, acts.Record, in).Get(ctx, &out)
		if err == nil && in.Release != nil {
			t.release = nil
			if !out.Released {
				// Nothing of the batch is written: the lease system ends
				// the lease, then the batch goes again without it.
				t.releaseMoved(ctx, *in.Release)
				continue
			}
		}
		if err == nil {
			t.Records = t.Records[n:]
			retry = 0
			continue
		}
		t.LastError = fmt.Sprintf("writing the SSOT: %v", err)
		t.log.Error("writing the SSOT", "error", err)
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == activities.ErrInvalidRecord {
			// The store will never take this batch as it is.
			t.Records = t.Records[n:]
			continue
		}
		if errors.As(err, &app) && app.Type() == activities.ErrRecordConflict {
			// An id stored already with other content: that entry is not
			// written again; the rest of the batch is.
			var id string
			if app.Details(&id) == nil && t.dropRecord(id) {
				continue
			}
			t.Records = t.Records[n:]
			continue
		}
		// The store is out of reach: the batch waits, and so does what
		// follows it, so nothing moves past a record not written.
		retry = min(retry*2+time.Second, time.Minute)
		if err := workflow.Sleep(ctx, retry); err != nil {
			return
		}
	}
}

// dropRecord removes the queued entry id; false when none has it.
func (t *taskRun) dropRecord(id string) bool {
	for i, e := range t.Records {
		if e.Kind != snapshotKind && e.ID == id {
			t.Records = slices.Delete(t.Records, i, i+1)
			return true
		}
	}
	return false
}

// notify queues a notice to admins; the notice loop sends them in order.
// Every notice goes to the worker's notifier, which knows the channels
// the worker has.
func (t *taskRun) notify(ev notify.Event, n queuedNotice) {
	n.Event = string(ev)
	t.Notices = append(t.Notices, n)
	t.wake()
}

func (t *taskRun) noticeLoop(ctx workflow.Context) {
	ctx = workflow.WithActivityOptions(ctx, notifyOptions())
	for {
		if len(t.Notices) == 0 {
			t.noticing = false
			return
		}
		n := t.Notices[0]
		if err := workflow.ExecuteActivity(ctx, acts.Notify, n.input(t.In.TaskID)).Get(ctx, nil); err != nil {
			t.LastError = fmt.Sprintf("notifying admins: %v", err)
			t.log.Warn("notifying admins", "event", n.Event, "error", err)
		}
		t.Notices = t.Notices[1:]
	}
}

// drain waits until every queued record, release and notice is out.
func (t *taskRun) drain(ctx workflow.Context) error {
	err := workflow.Await(ctx, func() bool { return len(t.Records) == 0 && t.release == nil && len(t.Notices) == 0 })
	if err != nil {
		return fmt.Errorf("flushing task %s: %w", t.In.TaskID, err)
	}
	return nil
}

// send records an outgoing message, waits until the SSOT has it, then
// hands it to its recipient without waiting for delivery: a command-mode
// agent runs inside the delivery, and its reply comes back as an update.
func (t *taskRun) send(ctx workflow.Context, m amp.Message) error {
	if err := m.Validate(); err != nil {
		// A bug or a plan the checks let through: say so, send anyway so
		// the agent's own parser has the last word.
		t.LastError = fmt.Sprintf("ampflow built an invalid %s: %v", m.Type, err)
		t.log.Error("built an invalid message", "msg_id", m.MsgID, "error", err)
	}
	t.recordMessage(ctx, m)
	if m.RequiresAck {
		t.Outbox = append(t.Outbox, m)
	}
	t.snapshot()
	if err := workflow.Await(ctx, func() bool { return len(t.Records) == 0 }); err != nil {
		return fmt.Errorf("recording %s: %w", m.MsgID, err)
	}
	if m.To != amp.RoleExecutor && m.To != amp.RoleReviewer {
		return nil
	}
	// A new message to an agent supersedes the one it may still be
	// working on: a command-mode agent of the old one is stopped, and a
	// failed delivery of it is past.
	if stop := t.deliveries[m.To]; stop != nil {
		stop()
	}
	if t.Failed != nil && t.Failed.To == m.To {
		t.clearFailed()
	}
	t.endRecovery(ctx, m.To, fmt.Sprintf("%s replaces the %s's run that was being recovered", m.MsgID, m.To))
	in := activities.DeliverInput{Message: m, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch, Priority: t.In.Priority}
	if m.Type == amp.TypeReviewRequest {
		in.Commit, in.Description, in.Criteria = t.ResultCommit, t.In.Plan.Description, t.In.Plan.AcceptanceCriteria
	}
	if !t.budget(m, &in) {
		t.log.Warn("delivering message", "msg_id", m.MsgID, "to", m.To, "error", t.Failed.Summary)
		return nil
	}
	dctx, stop := workflow.WithCancel(ctx)
	t.deliveries[m.To] = stop
	remote := func(ctx workflow.Context) error { return t.deliverRemote(ctx, dctx, in) }
	// A pull-mode delivery only marks the message as ready: a local
	// activity spares it a round trip through the server. Only the worker
	// knows how an agent is reached; it refuses command and webhook
	// agents, which then get a regular activity.
	f := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(dctx, localDeliverOptions()), acts.Deliver, in)
	t.delivering++
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { t.delivering-- }()
		err := f.Get(ctx, nil)
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == activities.ErrNeedsActivity {
			t.takeHost(ctx, err)
			err = remote(ctx)
		}
		// A runner that hit its vendor's limit waits for the reset on a
		// durable timer, then runs again, resuming its session.
		for n := 0; errors.As(err, &app) && app.Type() == activities.ErrRateLimited; n++ {
			var d activities.DeliveryFailure
			_ = app.Details(&d)
			now := workflow.Now(ctx)
			wait := rateLimitWait(now, d.ResetAt, n)
			t.PausedUntil = now.Add(wait)
			t.addTimeline(ctx, task.TimelineEntry{Kind: "rate_limit", MsgID: m.MsgID, To: string(m.To),
				Note: fmt.Sprintf("delivering again at %s: %s", t.PausedUntil.UTC().Format(time.RFC3339), app.Message())})
			t.snapshot()
			if err = workflow.NewTimer(dctx, wait).Get(ctx, nil); err == nil {
				err = remote(ctx)
			}
			t.PausedUntil = time.Time{}
		}
		// A runner parked on a tool call waits for its answer with no
		// process, then resumes its session.
		// An interrupted one waits, the same way, for a message.
		for errors.As(err, &app) && (app.Type() == activities.ErrParked || app.Type() == activities.ErrInterrupted) {
			if app.Type() == activities.ErrInterrupted {
				in.Resume, err = t.awaitSteer(ctx, dctx, m, app)
			} else {
				in.Resume, err = t.unpark(ctx, dctx, m, app)
			}
			if err == nil {
				err = remote(ctx)
			}
		}
		if err == nil || temporal.IsCanceledError(err) || dctx.Err() != nil {
			// A stopped delivery is over whatever its worker answered
			// last: a newer message or the task's end took its place.
			return
		}
		f := failure(m, err)
		t.log.Warn("delivering message", "msg_id", m.MsgID, "to", m.To, "error", f.Summary)
		// The wait for the reply raises it to the admins.
		t.Failed = f
		t.endRecovery(ctx, m.To, "the "+string(m.To)+"'s delivery failed: "+f.Summary)
	})
	return nil
}

// failure reads what went wrong in a delivery: the activity's one-line
// summary and the agent's stderr, or the error itself.
func failure(m amp.Message, err error) *deliveryFailed {
	f := &deliveryFailed{MsgID: m.MsgID, To: m.To}
	f.Summary, f.Stderr = DeliveryError(err)
	var app *temporal.ApplicationError
	var d activities.DeliveryFailure
	if errors.As(err, &app) && app.HasDetails() && app.Details(&d) == nil {
		f.Budget = d.Class == activities.FailureMaxCost
	}
	return f
}

// DeliveryError reads a failed Deliver activity's error: its one-line
// summary and the agent's stderr, or the error's own message.
func DeliveryError(err error) (summary, stderr string) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.HasDetails() {
		var d activities.DeliveryFailure
		if app.Details(&d) == nil {
			summary, stderr = d.Summary, d.Stderr
		}
	}
	if summary == "" {
		summary = errMessage(err)
	}
	return strings.Join(strings.Fields(summary), " "), stderr // one line
}

// errMessage is an activity error's own message, without the SDK's wrapping.
func errMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}
