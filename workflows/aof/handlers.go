package aof

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// Delegation states.
const (
	DelegationRequested = "requested"
	DelegationAccepted  = "accepted"
	DelegationRejected  = "rejected"
)

func (r *aofRun) validateMessage(in MessageInput) error {
	m := in.Message
	if m.TaskID != r.Task.TaskID {
		return refusal.New(CodeTaskIDMismatch, "taskId: %s is not task %s", m.TaskID, r.Task.TaskID)
	}
	switch m.Type {
	case TypeCompletionReport:
		if m.Completion == nil {
			return refusal.Field("payload", "a completion report is required")
		}
		return r.validateCompletion(m)
	case TypeStatusUpdate:
		if m.Status == nil {
			return refusal.Field("payload", "a status update is required")
		}
	case TypeHandoffRequest:
		h := m.Handoff
		if h == nil {
			return refusal.Field("payload", "a handoff request is required")
		}
		if h.ParentTaskID == r.Task.TaskID {
			return refusal.Field("payload.parentTaskId", "a task cannot be its own parent")
		}
		if p := r.Task.ParentTaskID; p != "" && p != h.ParentTaskID {
			return refusal.New(CodeParentConflict, "payload.parentTaskId: task %s is the child of %s already: it cannot be handed off from %s",
				r.Task.TaskID, p, h.ParentTaskID)
		}
		if in.ParentDepth+1 > 1 {
			return refusal.New(CodeNestedDelegation, "parent %s has delegation depth %d: a delegated task cannot delegate again",
				h.ParentTaskID, in.ParentDepth)
		}
	case TypeHandoffAccepted, TypeHandoffRejected:
		if m.Reply == nil {
			return refusal.Field("payload", "a handoff reply is required")
		}
	default:
		return refusal.New(CodeUnknownType, "type: unknown message type %q", m.Type)
	}
	return Authorize(r.Task, in)
}

// message applies a valid message by its type. Each is idempotent by the
// task's state: a repeat changes nothing.
func (r *aofRun) message(ctx workflow.Context, in MessageInput) (Result, error) {
	if err := r.validateMessage(in); err != nil {
		return Result{}, err
	}
	if err := r.verifyCommand(ctx, in.SignedAs); err != nil {
		return Result{}, err
	}
	// The state may have moved while the signature was checked.
	if err := r.validateMessage(in); err != nil {
		return Result{}, err
	}
	m := in.Message
	var res Result
	switch m.Type {
	case TypeCompletionReport:
		res = r.completion(ctx, m)
	case TypeStatusUpdate:
		res = r.statusUpdate(ctx, m)
	case TypeHandoffRequest:
		res = r.handoff(ctx, m, in.ParentDepth)
	case TypeHandoffAccepted:
		res = r.handoffAccepted(ctx, m)
	case TypeHandoffRejected:
		res = r.handoffRejected(ctx, m)
	}
	if err := r.awaitSaved(ctx); err != nil {
		return Result{}, err
	}
	res.Task = r.view()
	return res, nil
}

// resultOf is the run result a completion report writes.
func (r *aofRun) resultOf(m Message) RunResult { return resultFor(r.Task, m) }

func resultFor(t Task, m Message) RunResult {
	c := m.Completion
	return RunResult{TaskID: t.TaskID, AgentID: m.FromAgent, CompletedAt: At(m.SentAt), Outcome: c.Outcome,
		SummaryRef: c.SummaryRef, HandoffRef: c.HandoffRef, Deliverables: c.Deliverables, Tests: c.Tests,
		Blockers: c.Blockers, Notes: c.Notes}
}

// repeated reports whether m is the completion the task holds already.
func (r *aofRun) repeated(m Message) bool {
	return RepeatsResult(r.Task, m)
}

// RepeatsResult reports whether m is a completion report that t holds
// already: a retry of the report taken, which changes nothing.
func RepeatsResult(t Task, m Message) bool {
	return m.Completion != nil && t.Result != nil && reflect.DeepEqual(*t.Result, resultFor(t, m))
}

// validateCompletion takes a completion report only from the agent that
// runs the task, while it runs; a repeat of the report taken is a no-op,
// and any other report once the run is over (the task in review, done,
// ready or blocked) is refused not_running, as docs/aof.md says.
func (r *aofRun) validateCompletion(m Message) error {
	if r.repeated(m) {
		return nil
	}
	if r.Task.Status != StatusInProgress {
		return refusal.New(CodeNotRunning, "task %s is %s, not in_progress: a completion report is taken only while a run of it goes on",
			r.Task.TaskID, r.Task.Status)
	}
	if !r.running(m.FromAgent) {
		who := "no agent"
		if run := r.Task.Run; run != nil && run.Status == RunRunning {
			who = run.AgentID
		}
		return refusal.New(CodeNotRunning, "fromAgent: task %s runs for %s: a completion report of %s is refused",
			r.Task.TaskID, who, m.FromAgent)
	}
	return nil
}

// completion writes run_result.json and logs task.completed; the
// transitions wait for the session's end or a stale heartbeat.
func (r *aofRun) completion(ctx workflow.Context, m Message) Result {
	c := m.Completion
	if r.Task.Status == StatusDone {
		return Result{Note: "the task is done already"}
	}
	if r.repeated(m) {
		return Result{Note: "the same completion was reported already"}
	}
	res := r.resultOf(m)
	r.touch(ctx)
	r.Task.Result = &res
	r.artifact(ArtifactResult, res)
	payload := map[string]any{"outcome": c.Outcome, "summaryRef": c.SummaryRef,
		"tests": c.Tests, "blockers": c.Blockers, "notes": c.Notes}
	if len(m.Warnings) > 0 {
		// A missing summary or handoff file does not stop the report.
		payload["warnings"] = m.Warnings
	}
	r.event(ctx, EventTaskCompleted, m.FromAgent, payload)
	return Result{Changed: true}
}

// statusUpdate transitions when a valid status is given; otherwise, or
// when the transition is not valid, it appends the work log.
func (r *aofRun) statusUpdate(ctx workflow.Context, m Message) Result {
	u := m.Status
	note := ""
	if u.Status != "" && u.Status != r.Task.Status {
		switch {
		case r.Task.Status == StatusReview:
			// Only the review decision takes a task out of review.
			note = "the task is in review: only the review decision moves it, so the work log is appended instead"
		case u.Status == StatusInProgress:
			// A run starts with dispatch, which writes run.json and
			// starts the heartbeat; without them the task would never
			// time out.
			note = "in_progress is dispatch's to give: the work log is appended instead"
		case u.Status == StatusDone:
			// Done comes from the admins' review (or a completion that
			// needs none), never from the agent's word alone.
			note = "done is the review's to give: the work log is appended instead"
		case ValidTransition(r.Task.Status, u.Status):
			r.touch(ctx)
			r.transition(ctx, u.Status, m.FromAgent, TransitionReason(*u))
			return Result{Changed: true}
		default:
			note = fmt.Sprintf("%s → %s is not a valid transition: the work log is appended instead", r.Task.Status, u.Status)
		}
	}
	line := WorkLogLine(m.SentAt, u.Progress, u.Notes, u.Blockers)
	if line == "" {
		if note == "" {
			return Result{Note: "the task is " + string(r.Task.Status) + " already"}
		}
		line = WorkLogLine(m.SentAt, "", fmt.Sprintf("status %s refused: %s", u.Status, note), nil)
	}
	r.touch(ctx)
	r.appendWorkLog(line)
	return Result{Changed: true, Note: note}
}

// Bounds of the work log kept in the task's state (and in its body): its
// newest MaxWorkLogLines lines, at most MaxWorkLogBytes in all, each cut
// at MaxWorkLogLine bytes. The events keep every message whole
// (protocol.message.received), so the state that each save and each
// continue-as-new carries stays far below Temporal's payload limit.
const (
	MaxWorkLogLines = 100
	MaxWorkLogBytes = 64 << 10
	MaxWorkLogLine  = 8 << 10
)

func (r *aofRun) appendWorkLog(line string) {
	if len(line) > MaxWorkLogLine {
		line = strings.ToValidUTF8(line[:MaxWorkLogLine], "") + " …"
	}
	if !strings.Contains(r.Task.Body, WorkLogHeading) {
		if r.Task.Body != "" {
			r.Task.Body = strings.TrimRight(r.Task.Body, "\n") + "\n\n"
		}
		r.Task.Body += WorkLogHeading + "\n\n"
	}
	r.Task.Body += line + "\n"
	r.Task.WorkLog = append(r.Task.WorkLog, line)
	size := 0
	for _, l := range r.Task.WorkLog {
		size += len(l)
	}
	for len(r.Task.WorkLog) > MaxWorkLogLines || size > MaxWorkLogBytes {
		old := r.Task.WorkLog[0]
		r.Task.WorkLog = r.Task.WorkLog[1:]
		size -= len(old)
		r.Task.Body = strings.Replace(r.Task.Body, old+"\n", "", 1)
		r.Task.WorkLogDropped++
	}
}

// handoff links the task as the child of the request's parent and writes
// the request as its inputs.
func (r *aofRun) handoff(ctx workflow.Context, m Message, parentDepth int) Result {
	h := *m.Handoff
	if r.Task.Handoff != nil && reflect.DeepEqual(*r.Task.Handoff, h) && r.Task.ParentTaskID == h.ParentTaskID {
		return Result{Note: "the same handoff was requested already"}
	}
	r.touch(ctx)
	r.Task.ParentTaskID = h.ParentTaskID
	r.Task.Metadata.DelegationDepth = parentDepth + 1
	r.Task.Handoff = &h
	r.Task.Delegation = DelegationRequested
	r.artifact(ArtifactHandoffJSON, h)
	r.artifact(ArtifactHandoffMD, HandoffMarkdown(h))
	r.event(ctx, EventDelegationRequest, m.FromAgent, map[string]any{"parentTaskId": h.ParentTaskID, "toAgent": h.ToAgent,
		"delegationDepth": r.Task.Metadata.DelegationDepth, "dueBy": h.DueBy})
	return Result{Changed: true}
}

func (r *aofRun) handoffAccepted(ctx workflow.Context, m Message) Result {
	if r.Task.Delegation == DelegationAccepted {
		return Result{Note: "the handoff was accepted already"}
	}
	r.touch(ctx)
	r.Task.Delegation = DelegationAccepted
	r.event(ctx, EventDelegationAccepted, m.FromAgent, map[string]any{"parentTaskId": r.Task.ParentTaskID})
	return Result{Changed: true}
}

// handoffRejected blocks the child with the agent's reason.
func (r *aofRun) handoffRejected(ctx workflow.Context, m Message) Result {
	if r.Task.Delegation == DelegationRejected {
		return Result{Note: "the handoff was rejected already"}
	}
	reason := m.Reply.Reason
	if reason == "" {
		reason = "handoff rejected by " + m.FromAgent
	}
	r.touch(ctx)
	r.Task.Delegation = DelegationRejected
	note := ""
	if !r.transition(ctx, StatusBlocked, m.FromAgent, reason) && r.Task.Status != StatusBlocked {
		note = fmt.Sprintf("the task is %s: it cannot move to blocked", r.Task.Status)
	}
	r.event(ctx, EventDelegationRejected, m.FromAgent, map[string]any{"reason": reason, "parentTaskId": r.Task.ParentTaskID})
	return Result{Changed: true, Note: note}
}

// running reports whether agent runs the task now.
func (r *aofRun) running(agent string) bool {
	return r.Task.Status == StatusInProgress && r.Task.Run != nil && r.Task.Run.Status == RunRunning && r.Task.Run.AgentID == agent
}

func (r *aofRun) validateDispatch(in DispatchInput) error {
	if strings.TrimSpace(in.AgentID) == "" {
		return refusal.Field("agentId", "required")
	}
	if in.TTLMs < 0 || in.TTLMs > MaxTTL.Milliseconds() {
		return refusal.Field("ttlMs", "must be from 0 (the default, %d) to %d", DefaultTTL.Milliseconds(), MaxTTL.Milliseconds())
	}
	if r.running(in.AgentID) {
		return nil
	}
	if r.Task.Status != StatusReady {
		return refusal.New(CodeInvalidTransition, "task %s is %s: only a ready task is dispatched", r.Task.TaskID, r.Task.Status)
	}
	return nil
}

// dispatch starts a run: ready → in_progress, run.json and the first
// heartbeat. A repeat by the agent that runs it changes nothing.
func (r *aofRun) dispatch(ctx workflow.Context, in DispatchInput) (Result, error) {
	if err := r.validateDispatch(in); err != nil {
		return Result{}, err
	}
	if r.running(in.AgentID) {
		return Result{Task: r.view(), Note: "the task runs for " + in.AgentID + " already"}, nil
	}
	if err := r.verifyCommand(ctx, in.SignedAs); err != nil {
		return Result{}, err
	}
	ttl := in.TTLMs
	if ttl == 0 {
		ttl = DefaultTTL.Milliseconds()
	}
	leaseID, err := r.acquireLease(ctx, in.AgentID, time.Duration(ttl)*time.Millisecond)
	if err != nil {
		return Result{}, err
	}
	// Other updates ran while the lease was taken: the task may have
	// moved on, or the same agent's repeat may have started the run.
	if r.running(in.AgentID) {
		return Result{Task: r.view(), Note: "the task runs for " + in.AgentID + " already"}, nil
	}
	if err := r.validateDispatch(in); err != nil {
		if leaseID != "" {
			releaseLeases(ctx, r.Task.TaskID, []aofacts.AOFLeaseInput{{LeaseID: leaseID, AgentID: in.AgentID}})
		}
		return Result{}, err
	}
	now := workflow.Now(ctx).UTC()
	r.touch(ctx)
	r.transition(ctx, StatusInProgress, cmp.Or(in.By, in.AgentID), "dispatched to "+in.AgentID)
	r.Task.TTLMs = ttl
	r.Task.LeaseID = leaseID
	meta := map[string]any{}
	if leaseID != "" {
		meta["leaseId"] = leaseID
	}
	run := RunInfo{TaskID: r.Task.TaskID, AgentID: in.AgentID, StartedAt: At(now), Status: RunRunning,
		ArtifactPaths: map[string]string{"inputs": "inputs/", "work": "work/", "output": "output/"}, Metadata: meta}
	r.Task.Run = &run
	r.artifact(ArtifactRun, run)
	if r.Task.Result != nil {
		r.Task.Result = nil
		r.artifact(ArtifactResult, nil)
	}
	r.beat(now, in.AgentID, 1)
	if err := r.awaitSaved(ctx); err != nil {
		return Result{}, err
	}
	return Result{Task: r.view(), Changed: true}, nil
}

func (r *aofRun) beat(now time.Time, agent string, count int) {
	hb := Heartbeat{TaskID: r.Task.TaskID, AgentID: agent, LastHeartbeat: At(now), BeatCount: count,
		ExpiresAt: At(now.Add(time.Duration(r.Task.TTLMs) * time.Millisecond))}
	r.Task.Heartbeat = &hb
	r.artifact(ArtifactHeartbeat, hb)
}

func (r *aofRun) validateHeartbeat(in HeartbeatInput) error {
	if strings.TrimSpace(in.AgentID) == "" {
		return refusal.Field("agentId", "required")
	}
	if !r.running(in.AgentID) {
		who := "no agent"
		if run := r.Task.Run; run != nil && run.Status == RunRunning {
			who = run.AgentID
		}
		return refusal.New(CodeNotRunning, "task %s is %s and %s runs it: no heartbeat of %s is expected",
			r.Task.TaskID, r.Task.Status, who, in.AgentID)
	}
	return nil
}

// heartbeat renews the run's heartbeat: beatCount + 1, expiresAt = now +
// ttl.
func (r *aofRun) heartbeat(ctx workflow.Context, in HeartbeatInput) (Result, error) {
	if err := r.validateHeartbeat(in); err != nil {
		return Result{}, err
	}
	r.touch(ctx)
	r.beat(workflow.Now(ctx).UTC(), in.AgentID, r.Task.Heartbeat.BeatCount+1)
	r.renewLease(ctx, in.AgentID)
	if err := r.awaitSaved(ctx); err != nil {
		return Result{}, err
	}
	return Result{Task: r.view(), Changed: true}, nil
}

// sessionEnd applies the run result of a task in progress, as AOF's
// session_end hook does.
func (r *aofRun) sessionEnd(ctx workflow.Context, in SessionEndInput) (Result, error) {
	res := r.Task.Result
	switch {
	case r.Task.Status != StatusInProgress:
		return Result{Task: r.view(), Note: "the task is " + string(r.Task.Status) + ", not in_progress"}, nil
	case res == nil:
		return Result{Task: r.view(), Note: "no run result to apply"}, nil
	case in.AgentID != "" && in.AgentID != res.AgentID:
		return Result{Task: r.view(), Note: "the run result is " + res.AgentID + "'s"}, nil
	}
	if err := r.verifyCommand(ctx, in.SignedAs); err != nil {
		return Result{}, err
	}
	r.touch(ctx)
	r.applyOutcome(ctx, res.AgentID, "session_end_"+string(res.Outcome))
	if err := r.awaitSaved(ctx); err != nil {
		return Result{}, err
	}
	return Result{Task: r.view(), Changed: true}, nil
}

// verifyCommand refuses, with forbidden, a message, dispatch or session
// end that no channel holding the decision key signed (a raw Temporal update): the
// engine's check of answers, which records the refusal. Nothing changes.
func (r *aofRun) verifyCommand(ctx workflow.Context, signedAs func() (decision.Answer, error)) error {
	a, err := signedAs()
	if err != nil {
		return refusal.New(task.CodeInvalid, "reading the command: %v", err)
	}
	return r.decisions.Verify(ctx, a)
}

func (r *aofRun) sync(ctx workflow.Context, _ SyncInput) (Result, error) {
	if err := workflow.Await(ctx, func() bool { return r.Task.Rev > 0 }); err != nil {
		return Result{}, err
	}
	if err := r.awaitSaved(ctx); err != nil {
		return Result{}, err
	}
	return Result{Task: r.view()}, nil
}

// refuseEnded is the refusal of an answer to a task that is done.
func (r *aofRun) refuseEnded() error {
	return refusal.New(task.CodeFinished, "AOF task %s is done", r.Task.TaskID)
}
