package demo

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// fakeTasks simulates just enough of a task workflow for the script: an
// outbox per role, ACKs, results checked against git, review requests,
// verdicts, a redispatch carrying a rejection's issues, done on approval.
type fakeTasks struct {
	t     *testing.T
	clock time.Time

	in       task.Input
	id       string
	status   task.Status
	reason   string
	outbox   []amp.Message
	timeline []task.TimelineEntry
	rounds   int
	rejects  int

	// foreign sits in every inbox: another task's message, not the demo's.
	foreign []amp.Message
	// stall keeps a result in ci_check instead of sending it to review.
	stall bool
	// refuse ends the task at start, as a failed branch check does.
	refuse string
	// block keeps StartNext from answering until its context ends.
	block bool
	// early refuses this many first verdicts as unexpected, as a task
	// whose run loop has not caught up does.
	early int
	// approveAfter, when positive, holds the plan for an admin, who
	// approves it on the dashboard at that read of the state; with
	// neverApprove no admin comes.
	approveAfter int
	neverApprove bool
	pending      *decision.Decision
	decided      []decision.Outcome
	reads        int

	calls      []string
	results    []*amp.TaskResult
	dispatches []amp.Message
	problems   []string
}

var _ workflows.Tasks = (*fakeTasks)(nil)

func newFake(t *testing.T) *fakeTasks {
	f := &fakeTasks{t: t, clock: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	other := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-001", f.tick(), &amp.TaskDispatch{
		Description: "someone else's task", Repo: "/elsewhere", Branch: "feature/x",
		Subtasks:           []amp.Subtask{{SubtaskID: "S1", Description: "x", EstimatedLines: 1}},
		AcceptanceCriteria: []string{"x"}, RiskLevel: amp.RiskLow,
	})
	f.foreign = []amp.Message{other}
	return f
}

func (f *fakeTasks) tick() time.Time {
	f.clock = f.clock.Add(time.Second)
	return f.clock
}

func (f *fakeTasks) problem(format string, args ...any) {
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

func (f *fakeTasks) send(m amp.Message) {
	if err := m.Validate(); err != nil {
		f.problem("fake built an invalid %s: %v", m.Type, err)
	}
	f.outbox = append(f.outbox, m)
	f.timeline = append(f.timeline, task.TimelineEntry{Kind: "message", MsgID: m.MsgID, Type: string(m.Type)})
}

func (f *fakeTasks) dispatch(fix string) {
	p := f.in.Plan
	if fix != "" {
		p.Description += "\n\n" + fix
	}
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, f.id, f.tick(), &p)
	f.dispatches = append(f.dispatches, m)
	f.rounds++
	f.status = task.StatusDispatched
	f.send(m)
}

func (f *fakeTasks) StartNext(ctx context.Context, in task.Input, year int) (string, error) {
	f.calls = append(f.calls, "StartNext")
	if f.block {
		<-ctx.Done()
		return "", task.Errorf(task.CodeUnavailable, "starting a task: no answer")
	}
	f.id = fmt.Sprintf("T-%04d-%03d", year, 7)
	f.in = in
	probe := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, f.id, f.tick(), &in.Plan)
	if err := probe.Validate(); err != nil {
		f.problem("plan is not a valid task_dispatch: %v", err)
	}
	if f.refuse != "" {
		f.status, f.reason = task.StatusTerminated, f.refuse
		return f.id, nil
	}
	if f.approveAfter > 0 || f.neverApprove {
		f.status = task.StatusAwaitingApproval
		f.pending = &decision.Decision{ID: f.id + "-d1", Subject: f.id, Kind: task.KindPlanApproval, Prompt: "Approve the plan of " + f.id + "?"}
		return f.id, nil
	}
	f.timeline = append(f.timeline, task.TimelineEntry{Kind: "decision", Note: "plan approved automatically (risk low)"})
	f.dispatch("")
	return f.id, nil
}

// admin approves a pending plan when its time has come.
func (f *fakeTasks) admin() {
	if f.pending == nil || f.neverApprove {
		return
	}
	if f.reads++; f.reads < f.approveAfter {
		return
	}
	f.decided = append(f.decided, decision.Outcome{DecisionID: f.pending.ID, Subject: f.id, Kind: f.pending.Kind,
		Option: decision.OptApprove, By: "ana", Channel: "dashboard"})
	f.pending = nil
	f.dispatch("")
}

func (f *fakeTasks) Inbox(_ context.Context, role amp.Role) ([]amp.Message, error) {
	var out []amp.Message
	for _, m := range append(append([]amp.Message{}, f.foreign...), f.outbox...) {
		if m.To == role {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeTasks) Ack(_ context.Context, msgID string, as amp.Role) (task.SubmitResult, error) {
	for i, m := range f.outbox {
		if m.MsgID != msgID {
			continue
		}
		f.calls = append(f.calls, fmt.Sprintf("Ack %s %s", m.Type, as))
		if m.To != as {
			return task.SubmitResult{}, task.Errorf(task.CodeInvalid, "from: %s cannot ACK a message to %s", as, m.To)
		}
		a := amp.NewAck(as, m, f.tick())
		if err := a.Validate(); err != nil {
			f.problem("invalid ACK: %v", err)
		}
		f.outbox = append(f.outbox[:i:i], f.outbox[i+1:]...)
		if m.Type == amp.TypeTaskDispatch {
			f.status = task.StatusInProgress
		}
		f.timeline = append(f.timeline, task.TimelineEntry{Kind: "ack", MsgID: a.MsgID})
		return task.SubmitResult{MsgID: a.MsgID, Status: f.status}, nil
	}
	f.calls = append(f.calls, "Ack "+msgID)
	return task.SubmitResult{}, task.Errorf(task.CodeUnexpected, "no message %s awaits an ACK", msgID)
}

func (f *fakeTasks) Submit(_ context.Context, raw []byte) (task.SubmitResult, error) {
	if _, err := amp.Parse(raw); err != nil {
		f.calls = append(f.calls, "Submit invalid")
		f.problem("submitted message fails amp.Parse: %v", err)
		return task.SubmitResult{}, workflows.InvalidRecord(err)
	}
	rec, err := amp.ParseRecord(raw)
	if err != nil || rec.Message == nil {
		f.problem("submitted record is not a message: %v", err)
		return task.SubmitResult{}, workflows.InvalidRecord(err)
	}
	m := *rec.Message
	if err := m.Validate(); err != nil {
		f.problem("submitted message fails Validate: %v", err)
	}
	switch m.Type {
	case amp.TypeTaskResult:
		f.calls = append(f.calls, "Submit task_result")
		if f.status != task.StatusInProgress {
			return task.SubmitResult{}, task.Errorf(task.CodeUnexpected, "unexpected task_result: task is %s", f.status)
		}
		f.takeResult(m)
	case amp.TypeReviewVerdict:
		v := m.Verdict()
		f.calls = append(f.calls, "Submit review_verdict "+string(v.Decision))
		if f.early > 0 {
			f.early--
			return task.SubmitResult{}, task.Errorf(task.CodeUnexpected, "unexpected review_verdict: not yet")
		}
		if f.status != task.StatusInReview || len(f.outbox) > 0 {
			return task.SubmitResult{}, task.Errorf(task.CodeUnexpected, "unexpected review_verdict: task is %s", f.status)
		}
		f.timeline = append(f.timeline, task.TimelineEntry{Kind: "message", MsgID: m.MsgID, Type: string(m.Type)})
		if v.Decision == amp.DecisionRejected {
			f.rejects++
			f.dispatch(rejectionNote(v))
		} else {
			f.status = task.StatusDone
		}
	default:
		return task.SubmitResult{}, task.Errorf(task.CodeUnexpected, "unexpected %s", m.Type)
	}
	return task.SubmitResult{MsgID: m.MsgID, Status: f.status}, nil
}

// takeResult checks a result against the repository as the workflow's
// git check does, then asks for a review.
func (f *fakeTasks) takeResult(m amp.Message) {
	r := m.Result()
	f.results = append(f.results, r)
	f.timeline = append(f.timeline, task.TimelineEntry{Kind: "message", MsgID: m.MsgID, Type: string(m.Type)})
	if r.SubtaskID != f.in.Plan.Subtasks[0].SubtaskID {
		f.problem("result for subtask %s", r.SubtaskID)
	}
	repo := f.in.Plan.Repo
	if _, err := exec.Command("git", "-C", repo, "merge-base", "--is-ancestor", r.CommitHash, f.in.Plan.Branch).CombinedOutput(); err != nil {
		f.problem("commit %s is not on %s: %v", r.CommitHash, f.in.Plan.Branch, err)
	}
	out, err := exec.Command("git", "-C", repo, "diff", "--numstat", "main..."+r.CommitHash).Output()
	if err != nil {
		f.problem("diffing %s: %v", r.CommitHash, err)
	}
	var want amp.DiffSummary
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var added, removed int
		var file string
		if _, err := fmt.Sscanf(line, "%d\t%d\t%s", &added, &removed, &file); err != nil {
			f.problem("reading numstat %q: %v", line, err)
		}
		want.FilesChanged = append(want.FilesChanged, file)
		want.LinesAdded += added
		want.LinesRemoved += removed
	}
	if fmt.Sprint(want) != fmt.Sprint(r.DiffSummary) {
		f.problem("diff_summary %+v, git says %+v", r.DiffSummary, want)
	}
	if f.stall {
		f.status = task.StatusCICheck
		return
	}
	scope := amp.ScopeFull
	if f.rejects > 0 {
		scope = amp.ScopeIncremental
	}
	f.status = task.StatusInReview
	f.send(amp.NewMessage(amp.RoleCoordinator, amp.RoleReviewer, f.id, f.tick(), &amp.ReviewRequest{
		OriginalDispatchRef: f.dispatches[len(f.dispatches)-1].MsgID,
		TaskResultRef:       m.MsgID,
		ReviewScope:         scope,
		DiffURL:             "git diff main..." + r.CommitHash,
		RejectCount:         f.rejects,
	}))
}

func rejectionNote(v *amp.ReviewVerdict) string {
	var b strings.Builder
	b.WriteString("The reviewer rejected the previous round. Fix these issues:")
	for _, is := range v.Issues {
		fmt.Fprintf(&b, "\n- [%s] %s:%d %s (suggested: %s)", is.Severity, is.File, is.Line, is.Description, is.SuggestedFix)
	}
	return b.String()
}

func (f *fakeTasks) State(_ context.Context, taskID string) (task.State, error) {
	if taskID != f.id {
		return task.State{}, task.Errorf(task.CodeNotFound, "no task %s", taskID)
	}
	f.admin()
	return task.State{
		TaskID: f.id, Status: f.status, Reason: f.reason, Rounds: f.rounds, RejectCount: f.rejects,
		Outbox: f.outbox, Timeline: f.timeline, Pending: f.pending, Decided: f.decided,
	}, nil
}

var errUnused = errors.New("not used by the demo")

func (f *fakeTasks) Start(context.Context, task.Input) error { return errUnused }
func (f *fakeTasks) Decide(context.Context, string, decision.Answer) (task.DecideResult, error) {
	return task.DecideResult{}, errUnused
}
func (f *fakeTasks) Cancel(context.Context, string, task.CancelInput) (task.ChangeResult, error) {
	return task.ChangeResult{}, errUnused
}
func (f *fakeTasks) Replan(context.Context, string, task.ReplanInput) (task.ChangeResult, error) {
	return task.ChangeResult{}, errUnused
}
func (f *fakeTasks) Heartbeat(context.Context, string, task.HeartbeatInput) error { return errUnused }
func (f *fakeTasks) List(context.Context, task.Status, int) ([]workflows.TaskSummary, error) {
	return nil, errUnused
}
func (f *fakeTasks) Pending(context.Context) ([]decision.Decision, error) { return nil, errUnused }
