package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// taskState is everything a task run knows. It is carried whole across
// continue-as-new, so every field is exported for the data converter.
type taskState struct {
	In     task.Input    `json:"in"`
	Phase  phase         `json:"phase"`
	Status task.Status   `json:"status"`
	Plan   []amp.Subtask `json:"subtasks"`
	Index  int           `json:"index"`

	RejectCount    int `json:"reject_count"`
	SubtaskRejects int `json:"subtask_rejects"`
	CIRounds       int `json:"ci_rounds"`
	SubtaskCI      int `json:"subtask_ci"`
	Rounds         int `json:"rounds"`
	// CIRound numbers the task's CI rounds (ssot.CIRound): one per result
	// read, from its first reading to its verdict.
	CIRound int `json:"ci_round,omitempty"`

	// The messages of the current round.
	DispatchID string       `json:"dispatch_id,omitempty"`
	Result     *amp.Message `json:"result,omitempty"`
	RequestID  string       `json:"request_id,omitempty"`
	Verdict    *amp.Message `json:"verdict,omitempty"`
	// LastVerdictID is the last verdict of the current subtask, the base of
	// an incremental review.
	LastVerdictID string `json:"last_verdict_id,omitempty"`

	// ResultCommit is the current result's commit, in full once git has
	// resolved it; RejectedCommit is the last rejected one of the subtask.
	ResultCommit   string `json:"result_commit,omitempty"`
	RejectedCommit string `json:"rejected_commit,omitempty"`

	// Next dispatch: what the executor must fix, and the messages it refers to.
	FixNote string   `json:"fix_note,omitempty"`
	FixRefs []string `json:"fix_refs,omitempty"`

	// Review inputs from git and CI.
	DiffURL    string   `json:"diff_url,omitempty"`
	Mismatches []string `json:"mismatches,omitempty"`
	// CheckedResult is the last result checked against git: Mismatches
	// are its differences.
	CheckedResult string     `json:"checked_result,omitempty"`
	CI            *ciReading `json:"ci,omitempty"`
	Default       string     `json:"default_branch,omitempty"`
	// Base is the default branch's head when the plan was approved: the
	// results are diffed against it (activities.CheckResultInput.Base).
	Base string `json:"diff_base,omitempty"`
	// GitHubRepo is where the task's checks are read (HOST/OWNER/NAME),
	// fixed when the task started; empty when it has none.
	GitHubRepo string `json:"github_repo,omitempty"`
	// GitHub is the task's push and pull request (delivery.*); nil
	// without delivery.
	GitHub *githubState `json:"github,omitempty"`
	// Queue is the task's place in its target's merge queue; nil until
	// it enters it.
	Queue *queueState `json:"queue,omitempty"`

	// Outbox holds messages sent to agents and not yet ACKed.
	Outbox []amp.Message `json:"outbox,omitempty"`
	// Holders are the agents that hold each role's work (task.Holder).
	Holders []task.Holder `json:"holders,omitempty"`
	// Acked maps an ACKed msg_id to the ACK record's msg_id.
	Acked map[string]string `json:"acked,omitempty"`
	// Seen maps every accepted msg_id to a digest of its bytes.
	Seen map[string]string `json:"seen,omitempty"`
	// LastActive is when the agent being waited for last showed life.
	LastActive time.Time `json:"last_active"`
	// Recovered is the role whose agent reported a restart after a crash
	// while the task waited for its reply; the wait sends again and
	// clears it.
	Recovered amp.Role `json:"recovered,omitempty"`
	// Deadline is the running ACK deadline; zero when none.
	Deadline time.Time `json:"deadline"`
	// CIDeadline is when pending CI becomes a problem for the admins.
	CIDeadline time.Time `json:"ci_deadline"`

	// Lease is the branch lease the task holds; nil before it is granted,
	// once lost, and after the task ends.
	Lease *task.BranchLease `json:"lease,omitempty"`
	// LeaseWaiting is set while the task is in its branch's queue;
	// LeaseHolder is then the holder, and LeaseAskAt when the admins are
	// asked whether to go on waiting.
	LeaseWaiting bool      `json:"lease_waiting,omitempty"`
	LeaseHolder  string    `json:"lease_holder,omitempty"`
	LeaseAskAt   time.Time `json:"lease_ask_at,omitzero"`
	// Granted is a grant signalled, not yet confirmed by the lease
	// system (takeLease asks it again).
	Granted *task.BranchLease `json:"granted,omitempty"`

	// Decisions is the decision engine's state: the open decision, the
	// answer the run loop has yet to act on, and every closed one.
	Decisions decide.State `json:"decisions"`
	// Tools is what the task keeps of its agents' tool calls.
	Tools toolState `json:"tools,omitzero"`
	// Failed is the last delivery that failed; the wait for its reply
	// raises it to the admins.
	Failed *deliveryFailed `json:"delivery_failed,omitempty"`
	// Spend is what runner-mode roles have spent on the task, with their
	// caps; UsageKeys the runs counted; Sessions the last running total
	// of each session that reports one (role/runner/session).
	Spend     []task.Spend               `json:"spend,omitempty"`
	UsageKeys map[string]bool            `json:"usage_keys,omitempty"`
	Sessions  map[string]task.UsageInput `json:"sessions,omitempty"`
	// Host is the runner host that holds the task's checkouts and
	// sessions: its runs go to that host's queue (hosts.go). HostFresh
	// are the roles whose next run there is their first since the task
	// re-homed from HostLeft.
	Host      string     `json:"host,omitempty"`
	HostFresh []amp.Role `json:"host_fresh,omitempty"`
	HostLeft  *hostLeft  `json:"host_left,omitempty"`
	// PausedUntil is when a delivery waiting out a rate limit goes again.
	PausedUntil time.Time `json:"paused_until,omitzero"`
	// Interrupted is the run a person interrupted, while it waits;
	// Steered is the id of the newest message sent to the task's agent.
	Interrupted *task.Interruption `json:"interrupted,omitempty"`
	// Refused is set when the check refused the task's start: the
	// workflow ends failed with it (task.ErrRefused).
	Refused *task.Refusal `json:"refused,omitempty"`
	// Recovering is the agent's run that died and is delivered again,
	// until the retried run's first heartbeat (recover.go).
	Recovering *task.Recovery `json:"recovering,omitempty"`
	Steered    int64          `json:"steered,omitempty"`
	// Interrupt is an agent's critical escalation that the run loop has
	// yet to suspend the task for.
	Interrupt *amp.Message `json:"interrupt,omitempty"`
	// AgentEscalations are the times of the agents' escalations accepted
	// within the last EscalationWindow, oldest first.
	AgentEscalations []time.Time `json:"agent_escalations,omitempty"`
	// Submissions and Heartbeats count the agents' input the task has
	// taken over its life, against MaxTaskSubmissions and
	// MaxTaskHeartbeats.
	Submissions int `json:"submissions,omitempty"`
	Heartbeats  int `json:"heartbeats,omitempty"`
	// Where a suspended task goes back to when an admin resumes it.
	ResumeStatus task.Status `json:"resume_status,omitempty"`
	ResumePhase  phase       `json:"resume_phase,omitempty"`
	SuspendedAt  time.Time   `json:"suspended_at"`

	Cancel *task.CancelInput `json:"cancel,omitempty"`
	Replan *task.ReplanInput `json:"replan,omitempty"`

	Timeline  []task.TimelineEntry `json:"timeline"`
	MsgIDs    []string             `json:"msg_ids"`
	LastError string               `json:"last_error,omitempty"`
	Reason    string               `json:"reason,omitempty"`
	StartedAt time.Time            `json:"started_at"`
	UpdatedAt time.Time            `json:"updated_at"`

	// RecordRev counts the record loop's batches: each batch's state
	// carries the next, so the SSOT never replaces a task's state with an
	// older one (a late retry), across continue-as-new too.
	RecordRev int64 `json:"record_rev"`

	// Effects not yet carried out, in order: SSOT records and notices.
	Records []queuedRecord `json:"records,omitempty"`
	Notices []queuedNotice `json:"notices,omitempty"`
}

// deliveryFailed is a message that could not be delivered.
type deliveryFailed struct {
	MsgID   string   `json:"msg_id"`
	To      amp.Role `json:"to"`
	Summary string   `json:"summary"`
	Stderr  string   `json:"stderr,omitempty"`
	// Budget is set when the role's cost cap stopped the delivery: the
	// admins may raise the cap.
	Budget bool `json:"budget,omitempty"`
	// Raised is set once the admins have been asked.
	Raised bool `json:"raised,omitempty"`
}

// hostLeft is the host a task re-homed from, and when it was last seen.
type hostLeft struct {
	From   string    `json:"from"`
	SeenAt time.Time `json:"seen_at,omitzero"`
}

// line is the failure as Last error shows it.
func (f *deliveryFailed) line() string {
	return fmt.Sprintf("delivering %s to the %s failed: %s", f.MsgID, f.To, f.Summary)
}

// The carried state holds its own types, not the activities' inputs and
// results: a field added to an activity's input does not change the
// state's JSON. Each converts at its activity call.

// ciReading is what the task keeps of the last CI read: its review
// request and its decisions quote it.
type ciReading struct {
	State   string            `json:"state"`
	Failing []string          `json:"failing,omitempty"`
	Checks  map[string]string `json:"checks,omitempty"`
}

func newCIReading(r activities.CIStatusResult) *ciReading {
	return &ciReading{State: string(r.State), Failing: r.Failing, Checks: r.Checks}
}

// ciView is task.State.CI: off without CI, else the last reading's state.
func (s *taskState) ciView() string {
	if !s.In.Policy.CI {
		return task.CIOff
	}
	if s.CI == nil {
		return ""
	}
	return s.CI.State
}

// failed reports whether CI was read as failed.
func (c *ciReading) failed() bool {
	return c != nil && c.State == string(activities.CIFailed)
}

// queuedRecord is an SSOT record the record loop has yet to write, or,
// with snapshotKind, a write of the task's state.
type queuedRecord struct {
	ID         string          `json:"id,omitempty"`
	Kind       string          `json:"kind"`
	Body       json.RawMessage `json:"body,omitempty"`
	RecordedAt time.Time       `json:"recorded_at,omitzero"`
}

func (r queuedRecord) entry() activities.RecordEntry {
	return activities.RecordEntry{ID: r.ID, Kind: ssot.RecordKind(r.Kind), Body: r.Body, RecordedAt: r.RecordedAt}
}

// queuedNotice is a notice to the admins the notice loop has yet to send.
type queuedNotice struct {
	Event    string             `json:"event"`
	Status   task.Status        `json:"status"`
	Decision *decision.Decision `json:"decision,omitempty"`
	Outcome  *decision.Outcome  `json:"outcome,omitempty"`
	Message  *amp.Message       `json:"message,omitempty"`
	Text     string             `json:"text,omitempty"`
}

func (n queuedNotice) input(taskID string) notify.Input {
	return notify.Input{
		TaskID: taskID, Event: notify.Event(n.Event), Status: n.Status,
		Decision: n.Decision, Outcome: n.Outcome, Message: n.Message, Text: n.Text,
	}
}

func newTaskState(in task.Input, now time.Time) *taskState {
	return &taskState{
		In:        in,
		Phase:     phaseCheck,
		Status:    task.StatusAwaitingApproval,
		Plan:      append([]amp.Subtask(nil), in.Plan.Subtasks...),
		Acked:     map[string]string{},
		Seen:      map[string]string{},
		StartedAt: now,
		UpdatedAt: now,
		// A start after refused ones writes above their revisions.
		RecordRev: int64(in.Restarts) * restartRevs,
	}
}

func (s *taskState) subtask() *amp.Subtask {
	if s.Index < 0 || s.Index >= len(s.Plan) {
		return nil
	}
	return &s.Plan[s.Index]
}

func (s *taskState) inOutbox(msgID string) (amp.Message, bool) {
	for _, m := range s.Outbox {
		if m.MsgID == msgID {
			return m, true
		}
	}
	return amp.Message{}, false
}

func (s *taskState) dropOutbox(msgID string) {
	out := s.Outbox[:0]
	for _, m := range s.Outbox {
		if m.MsgID != msgID {
			out = append(out, m)
		}
	}
	s.Outbox = out
}

// dropOutboxTo forgets what is still unACKed by a role: a new dispatch
// supersedes the old one.
func (s *taskState) dropOutboxTo(r amp.Role) {
	out := s.Outbox[:0]
	for _, m := range s.Outbox {
		if m.To != r {
			out = append(out, m)
		}
	}
	s.Outbox = out
}

// claim makes agent the holder of role's work, taken with msgID at at;
// m is the message while it awaits the holder's reply. A role already
// held, or an agent without a name, changes nothing.
func (s *taskState) claim(role amp.Role, agent, msgID string, at time.Time, m *amp.Message) {
	if agent == "" || task.HolderOf(s.Holders, role) != nil {
		return
	}
	s.Holders = append(s.Holders, task.Holder{Role: role, Agent: agent, MsgID: msgID, Since: at, Unanswered: m})
}

// answered marks role's holder as having replied to what it took.
func (s *taskState) answered(role amp.Role) {
	if h := task.HolderOf(s.Holders, role); h != nil {
		h.Unanswered = nil
	}
}

// handOn hands role's work on: a new message to the role is anyone's
// to take.
func (s *taskState) handOn(role amp.Role) {
	out := s.Holders[:0]
	for _, h := range s.Holders {
		if h.Role != role {
			out = append(out, h)
		}
	}
	s.Holders = out
}

// interrupted reports whether a wait must end early: the task was
// cancelled or an agent escalated critically.
func (s *taskState) interrupted() bool {
	return s.Cancel != nil || s.Interrupt != nil
}

func (s *taskState) suspended() bool {
	return s.Status == task.StatusSuspended || s.Status == task.StatusLocked
}

// view is the state query's answer.
func (s *taskState) view() task.State {
	st := task.State{
		TaskID:         s.In.TaskID,
		Status:         s.Status,
		Risk:           s.In.Plan.RiskLevel,
		Description:    s.In.Plan.Description,
		Coordinator:    s.In.Coordinator,
		Origin:         s.In.Origin,
		Repo:           s.In.Plan.Repo,
		Branch:         s.In.Plan.Branch,
		CIRepo:         s.GitHubRepo,
		Subtasks:       s.Plan,
		SubtaskIndex:   s.Index,
		Subtask:        s.subtask(),
		RejectCount:    s.RejectCount,
		DiffMismatches: s.Mismatches,
		ResultChecked:  s.CheckedResult,
		CIRounds:       s.CIRounds,
		CIRound:        s.CIRound,
		CI:             s.ciView(),
		Rounds:         s.Rounds,
		Pending:        s.Decisions.Open,
		Decided:        s.Decisions.Decided,
		Outbox:         s.Outbox,
		Holders:        s.Holders,
		Timeline:       s.Timeline,
		Spend:          s.Spend,
		PausedUntil:    s.PausedUntil,
		Interrupted:    s.Interrupted,
		Recovering:     s.Recovering,
		Lease:          s.Lease,
		LeaseHolder:    s.LeaseHolder,
		LastError:      s.LastError,
		Reason:         s.Reason,
		StartedAt:      s.StartedAt,
		UpdatedAt:      s.UpdatedAt,
	}
	if d := s.Decisions.Open; d != nil && !s.Status.Terminal() {
		st.WaitingFor = d.Kind
		if st.Status = task.ReportedStatus(s.Status, d.Kind); st.Status != s.Status {
			st.UnderlyingStatus = s.Status
		}
	} else if s.Recovering != nil {
		if st.Status = task.RecoveringStatus(s.Status); st.Status != s.Status {
			st.UnderlyingStatus = s.Status
		}
	}
	if gs := s.GitHub; gs != nil {
		st.PullRequest, st.MergeCommit = gs.URL, gs.MergeCommit
	}
	if q := s.Queue; q != nil {
		qs := q.QueueState
		st.Queue = &qs
		if q.Merged != "" {
			st.MergeCommit = q.Merged
		}
	}
	if st.Timeline == nil {
		st.Timeline = []task.TimelineEntry{}
	}
	for _, sp := range s.Spend {
		st.CostUSD += sp.CostUSD
		st.Tokens.Input += sp.Tokens.Input
		st.Tokens.Output += sp.Tokens.Output
	}
	if s.In.Policy.PlanApproval.Low != "" {
		st.PlanApproval = s.In.Policy.PlanApproval.For(s.In.Plan.RiskLevel).Stricter(s.In.Handling)
	}
	return st
}

func (s *taskState) result() task.Result {
	return task.Result{
		TaskID:      s.In.TaskID,
		Status:      s.Status,
		Reason:      s.Reason,
		Rounds:      s.Rounds,
		RejectCount: s.RejectCount,
		CIRounds:    s.CIRounds,
		MsgIDs:      append([]string{}, s.MsgIDs...),
		Merged:      s.merged(),
	}
}

// merged is the target's head the merge queue moved it to, if it did.
func (s *taskState) merged() string {
	if s.Queue == nil {
		return ""
	}
	return s.Queue.Merged
}
