package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	gateacts "github.com/ampflow/ampflow/activities/gate"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// Activities are called through typed nil pointers, so tests can mock them.
var (
	acts  *activities.Activities
	gacts *gateacts.Gate
)

// DefaultCallbackFor is how long a resolution is retried to the webhook
// when the input does not say.
const DefaultCallbackFor = 24 * time.Hour

// Backoff of the callback: doubling from the first retry, capped.
const (
	callbackFirstRetry = 2 * time.Second
	callbackMaxRetry   = 30 * time.Minute
)

// Record kinds of a gate's chain besides decisions.
const (
	kindGate     ssot.RecordKind = "gate"
	kindCallback ssot.RecordKind = "callback"
)

// Gate is the workflow of one gate: it asks the admins through the
// decision engine, records the resolution, and posts it to the agent's
// webhook, retried with backoff for up to CallbackFor.
//
// From the first release on, a change to the shape of its history goes
// behind workflow.GetVersion (docs/architecture.md); test/replay replays the recorded gate histories (testdata/gate), which
// TestRecordGateHistories in test/e2e records.
func Gate(ctx workflow.Context, in Input) (State, error) {
	g := &gateRun{
		State: State{Input: in, Status: StatusPending, Callback: CallbackState{Status: CallbackNone}},
		log:   log.With(workflow.GetLogger(ctx), "gate", in.GateID),
		id:    WorkflowID(in.GateID),
	}
	if in.WebhookURL != "" {
		g.Callback.Status = CallbackWaiting
	}
	g.engine = decide.New(&g.decisions, g.id, &g.policy.Decisions, gateHost{g})
	if err := g.setup(ctx); err != nil {
		return g.State, err
	}
	return g.run(ctx)
}

type gateRun struct {
	State
	decisions decide.State
	policy    task.Policy
	engine    *decide.Engine
	log       log.Logger
	id        string
	// ready says the policy is read and the decision raised.
	ready bool
	// deadline is Input.ExpiresAt: the decision expires then at the
	// latest.
	deadline time.Time
	// queue holds the side effects in order; rev numbers the saves of
	// the open decisions.
	queue []effect
	rev   int64
}

type effect struct {
	record  *activities.RecordEntry
	pending bool
	notice  *notify.Input
}

func (g *gateRun) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return g.snapshot(), nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, task.UpdateDecide, g.decide,
		workflow.UpdateHandlerOptions{Validator: g.validateDecide}); err != nil {
		return err
	}
	g.engine.Start(ctx)
	workflow.Go(ctx, g.drain)
	return nil
}

func (g *gateRun) snapshot() State {
	s := g.State
	if d := g.engine.Pending(); d != nil {
		c := *d
		s.Decision = &c
	}
	return s
}

func (g *gateRun) run(ctx workflow.Context) (State, error) {
	in := g.Input
	b, _ := json.Marshal(in)
	if err := g.open(ctx, b); err != nil {
		return g.State, err
	}
	g.queue = append(g.queue, effect{record: &activities.RecordEntry{ID: in.GateID + "-gate", Kind: kindGate, Body: b, RecordedAt: workflow.Now(ctx)}})
	if !in.ExpiresAt.IsZero() {
		g.deadline = in.ExpiresAt
		if now := workflow.Now(ctx); !now.Before(g.deadline) {
			o := decision.Outcome{Subject: g.id, Option: decision.OptReject, By: decision.By, Channel: decision.ChannelExpiry,
				At: now, Note: "expired at " + g.deadline.UTC().Format(time.RFC3339) + ", before the gate asked"}
			return g.finish(ctx, o)
		}
	}
	if err := g.takePolicy(ctx); err != nil {
		// Nobody may decide under no policy: the gate fails closed.
		g.log.Error("reading the policy; rejecting the gate", "err", err)
		o := decision.Outcome{Subject: g.id, Option: decision.OptReject, By: decision.By, Channel: decision.ChannelSystem,
			At: workflow.Now(ctx), Note: "no policy: " + err.Error()}
		return g.finish(ctx, o)
	}
	if _, err := g.engine.Raise(ctx, g.request()); err != nil {
		return g.State, err
	}
	g.ready = true
	kind := g.kind()
	if err := workflow.Await(ctx, func() bool { return g.engine.Answered(kind) }); err != nil {
		return g.State, err
	}
	return g.finish(ctx, *g.engine.Take(kind))
}

// open stores the gate's row, so that its status is readable by gate id
// (a signal's row is there already: the intake wrote it first).
func (g *gateRun) open(ctx workflow.Context, input []byte) error {
	in := g.Input
	body, _ := json.Marshal(map[string]json.RawMessage{"gate": input})
	row := ssot.GateRow{GateID: in.GateID, Kind: string(in.Kind), RunID: in.RunID, AgentID: in.AgentID, ProjectID: in.ProjectID,
		Gated: true, Status: string(StatusPending), Model: in.Cost.Model, InputTokens: in.Cost.InputTokens,
		OutputTokens: in.Cost.OutputTokens, ReportedUSD: in.Cost.ReportedUSD, Mismatch: in.Cost.Mismatch,
		ReceivedAt: in.ReceivedAt, Reasons: in.Reasons, Callback: g.Callback.Status, Body: body}
	if row.ReceivedAt.IsZero() {
		row.ReceivedAt = workflow.Now(ctx)
	}
	actx := workflow.WithLocalActivityOptions(ctx, storeOptions())
	return workflow.ExecuteLocalActivity(actx, gacts.GateOpen, gateacts.GateOpenInput{Row: row}).Get(ctx, nil)
}

func (g *gateRun) kind() decision.Kind {
	if g.Input.Kind == KindContract {
		return DecisionContract
	}
	return DecisionSignal
}

// finish records the outcome, resolves the gate in the store, calls the
// agent back and waits until every effect and handler is done.
func (g *gateRun) finish(ctx workflow.Context, o decision.Outcome) (State, error) {
	g.Status = StatusRejected
	if o.Option == decision.OptApprove {
		g.Status = StatusApproved
	}
	g.Outcome = &o
	g.ResolvedAt, g.ResolvedBy = o.At, o.By
	if o.DecisionID == "" {
		// Closed before a decision was raised (expired, no policy): the
		// chain still holds the outcome its status is read from.
		b, _ := json.Marshal(o)
		g.queue = append(g.queue, effect{record: &activities.RecordEntry{ID: g.Input.GateID + "-outcome", Kind: ssot.KindDecision, Body: b, RecordedAt: o.At}})
	}
	actx := workflow.WithLocalActivityOptions(ctx, storeOptions())
	if err := workflow.ExecuteLocalActivity(actx, gacts.GateResolve, gateacts.GateResolveInput{
		GateID: g.Input.GateID, Status: string(g.Status), By: o.By, At: o.At,
	}).Get(ctx, nil); err != nil {
		g.log.Error("recording the resolution", "err", err)
	}
	if g.Input.WebhookURL != "" {
		g.callBack(ctx)
	}
	if err := workflow.Await(ctx, func() bool { return len(g.queue) == 0 }); err != nil {
		return g.State, err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return g.State, err
	}
	return g.snapshot(), nil
}

// takePolicy reads the worker's policy: its admins and the decision
// engine's quorum, reminders, escalation and expiry.
func (g *gateRun) takePolicy(ctx workflow.Context) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrNoPolicy}},
	})
	var out activities.PolicyResult
	if err := workflow.ExecuteLocalActivity(lctx, acts.TaskPolicy, activities.PolicyInput{TaskID: g.id}).Get(ctx, &out); err != nil {
		return err
	}
	g.policy = out.Policy
	return nil
}

// risk is a gate's risk for the quorum: a signal's is medium; a
// contract's is the higher of what its level and its minimum handling
// say (riskOf).
func (g *gateRun) risk() amp.Risk {
	if c := g.Input.Contract; c != nil {
		return riskOf(c.Level, c.MinimumHandling)
	}
	return amp.RiskMedium
}

// riskOf maps a contract's risk level and minimum handling to a quorum's
// risk, the higher of the two: human_required is high and strict_confirm
// at least medium whatever the level's name, since a catalog names its
// own levels; of the names, the default catalog's and AMCP's map to low
// (none, minimal, low), medium (moderate, medium) or high (high, critical,
// severe), and an unknown name to medium.
func riskOf(level, handling string) amp.Risk {
	rank := map[amp.Risk]int{amp.RiskLow: 0, amp.RiskMedium: 1, amp.RiskHigh: 2}
	byLevel := amp.RiskMedium
	switch strings.ToLower(level) {
	case "none", "minimal", "low":
		byLevel = amp.RiskLow
	case "high", "critical", "severe":
		byLevel = amp.RiskHigh
	}
	byHandling := amp.RiskLow
	switch handling {
	case "human_required":
		byHandling = amp.RiskHigh
	case "strict_confirm":
		byHandling = amp.RiskMedium
	}
	if rank[byHandling] > rank[byLevel] {
		return byHandling
	}
	return byLevel
}

// request is the gate's question. Its digest binds exactly what is
// approved: the action, its summary, artifacts and cost, or the contract.
func (g *gateRun) request() decide.Request {
	in := g.Input
	extra := map[string]any{
		"gate_id": in.GateID, "kind": string(in.Kind), "agent_id": in.AgentID,
		"summary": in.Summary, "proposed_action": in.ProposedAction,
	}
	for k, v := range map[string]string{"run_id": in.RunID, "project_id": in.ProjectID, "model": in.Cost.Model} {
		if v != "" {
			extra[k] = v
		}
	}
	if c := in.Cost; c.ReportedUSD > 0 || c.ComputedUSD > 0 || c.InputTokens > 0 {
		s := fmt.Sprintf("$%.6f reported, $%.6f computed · %d in / %d out tokens", c.ReportedUSD, c.ComputedUSD, c.InputTokens, c.OutputTokens)
		if c.Mismatch {
			s += " · reported cost differs by more than 10%"
		}
		extra["cost"] = s
	}
	if len(in.Artifacts) > 0 {
		extra["artifacts"] = ArtifactFacts(in.Artifacts)
	}
	if len(in.Reasons) > 0 {
		extra["reasons"] = in.Reasons
	}
	if len(in.History) > 0 {
		extra["agent_history"] = in.History
	}
	var approves any = struct {
		GateID         string            `json:"gate_id"`
		RunID          string            `json:"run_id"`
		AgentID        string            `json:"agent_id"`
		ProjectID      string            `json:"project_id"`
		Summary        string            `json:"summary"`
		ProposedAction string            `json:"proposed_action"`
		Artifacts      []json.RawMessage `json:"artifacts"`
		Cost           Cost              `json:"cost"`
	}{in.GateID, in.RunID, in.AgentID, in.ProjectID, in.Summary, in.ProposedAction, in.Artifacts, in.Cost}
	prompt := fmt.Sprintf("Agent %s proposes: %s", in.AgentID, in.ProposedAction)
	if c := in.Contract; c != nil {
		extra["contract_id"], extra["primitive"], extra["parameters"] = c.ID, c.Primitive, c.Parameters
		extra["risk_level"], extra["minimum_handling"] = c.Level, c.MinimumHandling
		approves = c
		prompt = fmt.Sprintf("Execute %s (contract %s, %s) for %s?", c.Primitive, c.ID, c.MinimumHandling, in.AgentID)
	}
	return decide.Request{
		Kind:   g.kind(),
		Prompt: prompt,
		Options: []decision.Option{
			{ID: decision.OptApprove, Label: "Approve"},
			{ID: decision.OptReject, Label: "Reject"},
		},
		Context:   decision.Context{Description: in.Summary, Risk: g.risk(), Extra: extra},
		Approves:  approves,
		Required:  g.policy.Decisions.Quorum.For(g.risk()),
		OnExpiry:  decision.OptReject,
		ExpiresAt: g.deadline,
	}
}

func (g *gateRun) validateDecide(a decision.Answer) error {
	if !g.ready {
		return refusal.New(task.CodeStaleDecision, "decision_id: gate %s has no decision open yet", g.Input.GateID)
	}
	_, err := g.engine.Check(a)
	return err
}

func (g *gateRun) decide(ctx workflow.Context, a decision.Answer) (task.DecideResult, error) {
	r, err := g.engine.Answer(ctx, a)
	if err != nil {
		return task.DecideResult{}, err
	}
	if r.Outcome == nil {
		p := r.Open.Progress()
		return task.DecideResult{Status: task.Status(g.Status), Decision: r.Open, Progress: &p, Note: r.Note}, nil
	}
	if err := workflow.Await(ctx, func() bool { return g.Status != StatusPending }); err != nil {
		return task.DecideResult{}, err
	}
	return task.DecideResult{Outcome: *r.Outcome, Status: task.Status(g.Status)}, nil
}

// drain runs the queued effects in order: records, the open decisions'
// saves, notices. A notice that fails after its retries is logged; the
// gate goes on.
func (g *gateRun) drain(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return len(g.queue) > 0 }); err != nil {
			return
		}
		e := g.queue[0]
		switch {
		case e.record != nil:
			lctx := workflow.WithLocalActivityOptions(ctx, storeOptions())
			if err := workflow.ExecuteLocalActivity(lctx, gacts.GateRecord, gateacts.GateRecordInput{
				Subject: g.id, Entries: []activities.RecordEntry{*e.record},
			}).Get(ctx, nil); err != nil {
				g.log.Error("recording", "id", e.record.ID, "err", err)
			}
		case e.pending:
			g.rev++
			in := gateacts.GateDecisionsInput{Subject: g.id, Rev: g.rev, Decisions: []ssot.PendingDecision{}}
			if d := g.engine.Pending(); d != nil {
				b, _ := json.Marshal(d)
				in.Decisions = append(in.Decisions, ssot.PendingDecision{ID: d.ID, Subject: g.id, Kind: string(d.Kind),
					RaisedAt: d.RaisedAt, ExpiresAt: d.ExpiresAt, Body: b})
			}
			lctx := workflow.WithLocalActivityOptions(ctx, storeOptions())
			if err := workflow.ExecuteLocalActivity(lctx, gacts.GateDecisions, in).Get(ctx, nil); err != nil {
				g.log.Error("saving the open decisions", "err", err)
			}
		case e.notice != nil:
			nctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				StartToCloseTimeout: 30 * time.Second,
				RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 10},
			})
			if err := workflow.ExecuteActivity(nctx, acts.Notify, *e.notice).Get(ctx, nil); err != nil {
				g.log.Error("notifying", "event", e.notice.Event, "err", err)
			}
		}
		g.queue = g.queue[1:]
	}
}

// storeOptions run the SSOT writes as local activities, retried until
// the store answers: a gate must not lose its record.
func storeOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 200 * time.Millisecond,
			MaximumInterval: 30 * time.Second,
		},
	}
}

// gateHost is the gate's side of the decision engine.
type gateHost struct{ g *gateRun }

var noticeOf = map[decide.Event]notify.Event{
	decide.EventOpened:    notify.DecisionOpened,
	decide.EventProgress:  notify.DecisionProgress,
	decide.EventReminded:  notify.DecisionReminder,
	decide.EventEscalated: notify.DecisionEscalated,
	decide.EventClosed:    notify.DecisionClosed,
}

func (h gateHost) Record(ctx workflow.Context, id string, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		h.g.log.Error("encoding a record", "id", id, "err", err)
		return
	}
	h.g.queue = append(h.g.queue, effect{record: &activities.RecordEntry{ID: id, Kind: ssot.KindDecision, Body: b, RecordedAt: workflow.Now(ctx)}})
}

func (h gateHost) Notify(ctx workflow.Context, ev decide.Event, d decision.Decision, o *decision.Outcome) {
	g := h.g
	g.queue = append(g.queue, effect{pending: true})
	n := notify.Input{TaskID: g.id, Event: noticeOf[ev], Status: task.Status(g.Status), Decision: &d, Outcome: o}
	g.queue = append(g.queue, effect{notice: &n})
}

func (h gateHost) MayDecide(by string, escalated bool) bool {
	return h.g.policy.MayDecide(by, escalated)
}
