package workflows

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// toolState is what the task keeps of its agents' tool calls: the record
// of each is in the SSOT; here only what the asks still need.
type toolState struct {
	// Seq numbers the tool calls: ids are "<task_id>-tc<seq>".
	Seq int `json:"seq"`
	// Queue holds the asks not yet decided, oldest first; the first is
	// the one raised once no other decision is open.
	Queue []task.ToolCall `json:"queue,omitempty"`
	// Raised is the id of the tool_call decision open for Queue[0].
	Raised string `json:"raised,omitempty"`
	// Allowed maps a tool an admin allowed for the rest of the task to
	// the decision that allowed it.
	Allowed map[string]string `json:"allowed,omitempty"`
	// Answered keeps the last asks the admins settled (maxAnswered), and
	// Parked the ids of those whose runs were parked: the same call made
	// again by the resumed run is the answered one.
	Answered []task.ToolCall `json:"answered,omitempty"`
	Parked   []string        `json:"parked,omitempty"`
}

// maxAnswered bounds toolState.Answered.
const maxAnswered = 16

var (
	optAllowOnce = decision.Option{ID: task.OptAllowOnce, Label: "Allow once"}
	optAllowTool = decision.Option{ID: task.OptAllowTool, Label: "Allow this tool for the rest of the task"}
	optDenyTool  = decision.Option{ID: task.OptDeny, Label: "Deny", NoteRequired: true}
)

// setupTools registers the tool_call update and starts the loop that puts
// the asks to the admins one at a time.
func (t *taskRun) setupTools(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, task.UpdateToolCall, t.toolCall,
		workflow.UpdateHandlerOptions{Validator: t.validateToolCall}); err != nil {
		return fmt.Errorf("registering update %s: %w", task.UpdateToolCall, err)
	}
	return nil
}

// wakeTools starts the loop that puts tool asks to the admins when an ask
// is queued or raised and the loop is not running: a task whose agents
// ask nothing keeps no coroutine for it, which the workflow's dispatcher
// would wake on every pass. Before setup it does nothing: setup wakes it
// for what the task's state holds.
func (t *taskRun) wakeTools() {
	if t.effects == nil || t.asking || (len(t.Tools.Queue) == 0 && t.Tools.Raised == "") {
		return
	}
	t.asking = true
	workflow.Go(t.effects, t.toolAsks)
}

func (t *taskRun) validateToolCall(in task.ToolCall) error {
	if t.Status.Terminal() {
		return refusal.New(task.CodeFinished, "task %s is %s: it takes no more tool calls", t.In.TaskID, t.Status)
	}
	if strings.TrimSpace(in.Tool) == "" {
		return refusal.Field("tool", "required")
	}
	switch in.Action {
	case task.ToolAllow, task.ToolDeny, "ask":
	default:
		return refusal.Field("action", "must be allow, deny or ask, not %q", in.Action)
	}
	return nil
}

// toolCall records a tool call. The policy's allow or deny stands; an ask
// is allowed at once when an admin allowed the tool for the rest of the
// task, else it waits in the queue for the admins.
func (t *taskRun) toolCall(ctx workflow.Context, in task.ToolCall) (task.ToolCall, error) {
	if err := t.validateToolCall(in); err != nil {
		return task.ToolCall{}, err
	}
	if in.Action == "ask" {
		if c, ok := t.sameCall(in); ok {
			return c, nil
		}
	}
	t.Tools.Seq++
	c := in
	c.ID = fmt.Sprintf("%s-tc%d", t.In.TaskID, t.Tools.Seq)
	c.TaskID = t.In.TaskID
	c.At = workflow.Now(ctx)
	c.Decision, c.By, c.DecisionID = "", "", ""
	switch {
	case in.Action != "ask":
		c.Decision, c.By = in.Action, task.ByPolicy
	case t.Tools.Allowed[allowKey(&c)] != "":
		c.Decision, c.By, c.DecisionID = task.ToolAllow, task.ByPolicy, t.Tools.Allowed[allowKey(&c)]
		c.Note = "the admins allowed " + allowKey(&c) + " for the rest of the task (" + c.DecisionID + ")"
	default:
		c.Decision = task.ToolPending
		t.Tools.Queue = append(t.Tools.Queue, c)
		defer t.wakeTools()
	}
	if c.Decided() {
		c.DecidedAt = c.At
	}
	t.record(ctx, c.ID, ssot.RecordKind(task.RecordToolCall), c)
	if c.Decision == task.ToolDeny {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "tool_call", MsgID: c.ID, Type: c.Tool, From: c.Agent,
			Note: "denied by " + ruleName(c.Rule) + ": " + c.Reason})
	}
	return c, nil
}

func ruleName(rule string) string {
	if rule == "" {
		return "tools.default"
	}
	return "rule " + rule
}

// toolAsks raises the first queued ask once no decision is open, and
// settles it once its decision closes: answered, expired, or withdrawn by
// a decision of the task's own. It ends when no ask is queued or raised
// (wakeTools).
func (t *taskRun) toolAsks(ctx workflow.Context) {
	for {
		if len(t.Tools.Queue) == 0 && t.Tools.Raised == "" {
			t.asking = false
			return
		}
		err := workflow.Await(ctx, func() bool {
			if t.Tools.Raised != "" {
				d := t.decisions.Pending()
				return d == nil || d.ID != t.Tools.Raised
			}
			_, answerWaiting := t.decisions.AnsweredKind()
			return len(t.Tools.Queue) > 0 && t.decisions.Pending() == nil && !answerWaiting && !t.Status.Terminal()
		})
		if err != nil {
			t.asking = false
			return
		}
		if t.Tools.Raised != "" {
			t.settleToolAsk(ctx)
			continue
		}
		if err := t.raiseToolAsk(ctx); err != nil {
			t.log.Error("raising a tool_call decision", "error", err)
			c := t.Tools.Queue[0]
			t.Tools.Queue = t.Tools.Queue[1:]
			t.closeToolCall(ctx, c, decision.Outcome{Option: task.OptDeny, By: decision.By, Channel: decision.ChannelSystem, Note: err.Error()})
		}
	}
}

// toolApproves is what a tool_call decision approves: the call of that
// tool with that input in that directory, for that task.
type toolApproves struct {
	TaskID      string `json:"task_id"`
	Tool        string `json:"tool"`
	InputDigest string `json:"input_digest"`
	CWD         string `json:"cwd"`
}

func (t *taskRun) raiseToolAsk(ctx workflow.Context) error {
	c := &t.Tools.Queue[0]
	ctxt := t.decisionContext(nil)
	risk := amp.Risk(c.Risk)
	if risk == "" {
		risk = amp.RiskLow
	}
	ctxt.Extra = map[string]any{"tool_call": c.ID, "tool": c.Tool, "kind": c.Kind, "input": c.Input, "cwd": c.CWD,
		"rule": c.Rule, "reason": c.Reason, "agent": c.Agent, "risk": string(risk)}
	if c.Role != "" {
		ctxt.Extra["role"] = string(c.Role)
	}
	if c.CLI != "" {
		ctxt.Extra["cli"] = c.CLI
	}
	r := decide.Request{
		Kind:     task.KindToolCall,
		Prompt:   toolPrompt(*c),
		Options:  toolOptions(*c),
		Context:  ctxt,
		Approves: toolApproves{TaskID: t.In.TaskID, Tool: c.Tool, InputDigest: c.InputDigest, CWD: c.CWD},
		Required: t.In.Policy.Decisions.Quorum.For(risk),
		OnExpiry: task.OptDeny,
	}
	if c.AskTimeout > 0 {
		// Past ask_timeout a runner's run is parked; the ask stays open
		// park_timeout longer.
		r.ExpiresAt = workflow.Now(ctx).Add(c.AskTimeout + c.ParkTimeout)
	}
	d, err := t.decisions.Raise(ctx, r)
	if err != nil {
		return err
	}
	t.Tools.Raised, c.DecisionID, c.Digest = d.ID, d.ID, d.Digest
	return nil
}

// toolPrompt is the question the admins see.
func toolPrompt(c task.ToolCall) string {
	who := task.Asker(c.Role, c.CLI, c.Agent)
	in := c.Input
	if len(in) > 600 {
		in = in[:600] + "…"
	}
	p := fmt.Sprintf("%s wants to run %s (%s) in %s: %s", who, c.Tool, c.Kind, c.CWD, in)
	if c.Reason != "" {
		p += " — asked because " + c.Reason
	}
	return p
}

func (t *taskRun) settleToolAsk(ctx workflow.Context) {
	id := t.Tools.Raised
	t.Tools.Raised = ""
	var o decision.Outcome
	if a := t.decisions.Take(task.KindToolCall); a != nil && a.DecisionID == id {
		o = *a
	} else {
		for _, d := range slices.Backward(t.decisions.Decided()) {
			if d.DecisionID == id {
				o = d
				break
			}
		}
	}
	c := t.Tools.Queue[0]
	t.Tools.Queue = t.Tools.Queue[1:]
	t.closeToolCall(ctx, c, o)
	if o.Option != task.OptAllowTool && o.Option != task.OptAllowRepo {
		return
	}
	if t.Tools.Allowed == nil {
		t.Tools.Allowed = map[string]string{}
	}
	key := allowKey(&c)
	t.Tools.Allowed[key] = id
	// Asks for the tool already waiting are allowed by the same answer.
	rest := t.Tools.Queue[:0]
	for _, q := range t.Tools.Queue {
		if allowKey(&q) != key {
			rest = append(rest, q)
			continue
		}
		q.Note = "the admins allowed " + key + " for the rest of the task (" + id + ")"
		t.closeToolCall(ctx, q, decision.Outcome{DecisionID: id, Option: task.OptAllowOnce, By: o.By, Channel: o.Channel, At: o.At})
	}
	t.Tools.Queue = rest
}

// allowKey is what "allow for the rest of the task" allows of c: its
// tool, or for a destination the egress proxy asks about (kind network),
// that destination alone.
func allowKey(c *task.ToolCall) string {
	if c.Kind != "network" {
		return c.Tool
	}
	var dest struct{ Host, Port string }
	if json.Unmarshal([]byte(c.Input), &dest) != nil || dest.Host == "" {
		return c.Tool
	}
	return c.Tool + " " + net.JoinHostPort(dest.Host, dest.Port)
}

// allowToolOption is the option that allows c's allowKey for the task.
func allowToolOption(c task.ToolCall) decision.Option {
	if allowKey(&c) != c.Tool {
		return decision.Option{ID: task.OptAllowTool, Label: "Allow this destination for the rest of the task"}
	}
	return optAllowTool
}

// optAllowRepo allows a destination for every task of the repository:
// the API lets the next ask for it through (integrations/toolcalls).
var optAllowRepo = decision.Option{ID: task.OptAllowRepo, Label: "Allow this destination for every task of the repository"}

// toolOptions are the answers to c's ask.
func toolOptions(c task.ToolCall) []decision.Option {
	if allowKey(&c) != c.Tool {
		return []decision.Option{optAllowOnce, allowToolOption(c), optAllowRepo, optDenyTool}
	}
	return []decision.Option{optAllowOnce, optAllowTool, optDenyTool}
}

// closeToolCall records what became of an ask.
func (t *taskRun) closeToolCall(ctx workflow.Context, c task.ToolCall, o decision.Outcome) {
	c.Option, c.By, c.Channel = o.Option, o.By, o.Channel
	if o.Note != "" {
		c.Note = o.Note
	}
	if o.DecisionID != "" {
		c.DecisionID = o.DecisionID
	}
	c.DecidedAt = o.At
	if c.DecidedAt.IsZero() {
		c.DecidedAt = workflow.Now(ctx)
	}
	switch o.Option {
	case task.OptAllowOnce, task.OptAllowTool, task.OptAllowRepo:
		c.Decision = task.ToolAllow
	default:
		c.Decision = task.ToolDeny
		switch o.Channel {
		case decision.ChannelExpiry:
			c.Reason = "no admin answered within " + (c.AskTimeout + c.ParkTimeout).String()
		case decision.ChannelSystem:
			c.Reason = "the question was withdrawn: " + o.Note
		default:
			c.Reason = "denied by " + o.By + noteSuffix(o.Note)
		}
	}
	t.record(ctx, c.ID+task.ToolCallOutcome, ssot.RecordKind(task.RecordToolCall), c)
	if len(t.Tools.Answered) == maxAnswered {
		t.Tools.Answered = t.Tools.Answered[1:]
	}
	t.Tools.Answered = append(t.Tools.Answered, c)
}
