package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

var (
	optApprove     = decision.Option{ID: decision.OptApprove, Label: "Approve"}
	optRejectPlan  = decision.Option{ID: decision.OptReject, Label: "Reject", NoteRequired: true}
	optRedispatch  = decision.Option{ID: task.OptRedispatch, Label: "Redispatch"}
	optGuide       = decision.Option{ID: task.OptRedispatch, Label: "Redispatch with guidance", NoteRequired: true}
	optWait        = decision.Option{ID: task.OptWait, Label: "Keep waiting"}
	optTerminate   = decision.Option{ID: task.OptTerminate, Label: "Terminate"}
	optAccept      = decision.Option{ID: task.OptAccept, Label: "Accept as is"}
	optAcceptVerd  = decision.Option{ID: task.OptAccept, Label: "Accept verdict"}
	optOverApprove = decision.Option{ID: decision.OptApprove, Label: "Override: approve"}
	optOverReject  = decision.Option{ID: decision.OptReject, Label: "Override: reject", NoteRequired: true}
	optReviewAgain = decision.Option{ID: task.OptReviewAgain, Label: "Review again"}
	optReplan      = decision.Option{ID: task.OptReplan, Label: "Replan (CLI/API)"}
	optApproveAny  = decision.Option{ID: decision.OptApprove, Label: "Approve anyway"}
	optSkipCI      = decision.Option{ID: task.OptSkipCI, Label: "Review without CI"}
	optRetryCI     = decision.Option{ID: task.OptRetryCI, Label: "Check CI again"}
	optResume      = decision.Option{ID: task.OptResume, Label: "Resume"}
)

// ask raises a decision through the engine: it becomes the open one,
// goes into the SSOT and out to the admins' channels, bound by its digest
// to what it approves (see approves).
func (t *taskRun) ask(ctx workflow.Context, kind decision.Kind, prompt string, esc *amp.Message, opts ...decision.Option) error {
	c := t.decisionContext(esc)
	if kind == task.KindDeliveryFailed && t.Failed != nil {
		c.AgentStderr = t.Failed.Stderr
	}
	_, err := t.decisions.Raise(ctx, decide.Request{
		Kind:       kind,
		Prompt:     prompt,
		Options:    opts,
		Context:    c,
		Escalation: esc,
		Approves:   t.approves(kind, esc, c),
		Required:   t.required(kind),
		OnExpiry:   expiryOption(kind),
	})
	if err != nil {
		return fmt.Errorf("task %s: %w", t.In.TaskID, err)
	}
	return nil
}

func (t *taskRun) decisionContext(esc *amp.Message) decision.Context {
	c := decision.Context{
		Description: t.In.Plan.Description,
		Repo:        t.In.Plan.Repo,
		Branch:      t.In.Plan.Branch,
		Risk:        t.In.Plan.RiskLevel,
		RejectCount: t.RejectCount,
	}
	if st := t.subtask(); st != nil {
		c.Subtask = st.SubtaskID
	}
	if t.CI != nil {
		c.CIState = t.CI.State
	}
	if t.Result != nil && t.Result.Result() != nil {
		c.Blockers = t.Result.Result().Blockers
	}
	if t.Verdict != nil && t.Verdict.Verdict() != nil {
		v := t.Verdict.Verdict()
		c.Issues = v.Issues
		conf := v.Confidence
		c.Confidence = &conf
	}
	if esc != nil && esc.Escalation() != nil {
		c.Suggested = esc.Escalation().SuggestedActions
	}
	return c
}

func via(channel string) string { return " via " + channel }

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return ": " + note
}

// withdrawDecision closes the open decision without an admin: what it
// asked became moot.
func (t *taskRun) withdrawDecision(ctx workflow.Context, why string) {
	t.decisions.Withdraw(ctx, why)
}

// supersede closes what a wait asked the admins when the agent answered
// first: the open decision is withdrawn, and a choice already made but not
// taken is dropped, with a note in the timeline.
func (t *taskRun) supersede(ctx workflow.Context, why string, kinds ...decision.Kind) {
	if t.decisions.PendingOf(kinds...) != nil {
		t.withdrawDecision(ctx, why)
	}
	if o := t.decisions.Take(kinds...); o != nil {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "decision", MsgID: o.DecisionID, Type: string(o.Kind),
			Note: fmt.Sprintf("%s by %s had no effect: %s", o.Option, o.By, why)})
	}
}

// question is a decision a step raises.
type question struct {
	kind    decision.Kind
	prompt  string
	options []decision.Option
	// escalation builds the escalation message that goes with the
	// question, only once it is raised; nil sends none.
	escalation func() *amp.Message
	// withdraw is the note the open decision it replaces is withdrawn with.
	withdraw string
	// unless lists the kinds whose question, open or answered but not
	// yet taken, stands for this one; kind alone when empty.
	unless []decision.Kind
}

// raiseOnce raises q unless a question of its kinds is still asked: a
// step entered again after a continue-as-new or an interruption goes back
// to its question without escalating twice. It is the one re-entry guard
// of the task's questions.
func (t *taskRun) raiseOnce(ctx workflow.Context, q question) error {
	kinds := q.unless
	if len(kinds) == 0 {
		kinds = []decision.Kind{q.kind}
	}
	if _, asked := t.decisions.Asking(kinds...); asked {
		return nil
	}
	return t.raise(ctx, q)
}

// raise sends q's escalation, withdraws the open decision, drops an
// answer no step took (its step gave way before taking it), and asks q,
// in that order.
func (t *taskRun) raise(ctx workflow.Context, q question) error {
	var esc *amp.Message
	if q.escalation != nil {
		esc = q.escalation()
	}
	t.withdrawDecision(ctx, q.withdraw)
	if k, ok := t.decisions.AnsweredKind(); ok {
		t.supersede(ctx, "superseded by a new decision", k)
	}
	return t.ask(ctx, q.kind, q.prompt, esc, q.options...)
}

// decideOn returns the admin's choice on a decision of kind: one already
// made, else the open one's once made, else a new one's (see raiseOnce:
// only a new one sends its escalation and takes prompt). Nil means the
// phase must give way (a cancel, an agent's critical escalation, or a
// continue-as-new) and will be entered again.
func (t *taskRun) decideOn(ctx workflow.Context, kind decision.Kind, prompt string, escalation func() *amp.Message, opts ...decision.Option) (*decision.Outcome, error) {
	if o := t.decisions.Take(kind); o != nil {
		return o, nil
	}
	q := question{kind: kind, prompt: prompt, options: opts, escalation: escalation, withdraw: "superseded"}
	if err := t.raiseOnce(ctx, q); err != nil {
		return nil, err
	}
	err := workflow.Await(ctx, func() bool {
		if t.decisions.Answered(kind) || t.Cancel != nil || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return true
		}
		return t.Interrupt != nil && kind != task.KindAgentEscalation
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for decision of task %s: %w", t.In.TaskID, err)
	}
	return t.decisions.Take(kind), nil
}
