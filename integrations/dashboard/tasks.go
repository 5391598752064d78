package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// tasksPerPage is how many tasks the tasks page lists at a time; with a
// text filter it searches this many times as many.
const tasksPerPage = 100

// Statuses a task can have, for the status filter.
var statuses = []task.Status{
	task.StatusAwaitingApproval, task.StatusAwaitingLease, task.StatusDispatched, task.StatusInProgress,
	task.StatusCICheck, task.StatusInReview, task.StatusRecovering, task.StatusAwaitingAdmin, task.StatusLocked, task.StatusSuspended,
	task.StatusDone, task.StatusTerminated,
}

// stateView is what the pages read of a task's saved state (task.State).
type stateView struct {
	Status         string               `json:"status"`
	WaitingFor     string               `json:"waiting_for"`
	Underlying     string               `json:"underlying_status"`
	Recovering     *task.Recovery       `json:"recovering"`
	Risk           string               `json:"risk_level"`
	Description    string               `json:"description"`
	Origin         *task.Origin         `json:"origin"`
	Repo           string               `json:"repo"`
	Branch         string               `json:"branch"`
	CIRepo         string               `json:"ci_repo"`
	PullRequest    string               `json:"pull_request"`
	MergeCommit    string               `json:"merge_commit"`
	Subtasks       []subtaskView        `json:"subtasks"`
	SubtaskIndex   int                  `json:"subtask_index"`
	Subtask        *subtaskView         `json:"subtask"`
	RejectCount    int                  `json:"reject_count"`
	DiffMismatches []string             `json:"diff_mismatches"`
	CIRounds       int                  `json:"ci_rounds"`
	CIState        string               `json:"ci"`
	CIRound        int                  `json:"ci_round"`
	Rounds         int                  `json:"rounds"`
	Pending        *decision.Decision   `json:"pending"`
	Decided        []decision.Outcome   `json:"decided"`
	Outbox         []messageView        `json:"outbox"`
	Holders        []holderView         `json:"holders"`
	Timeline       []task.TimelineEntry `json:"timeline"`
	LastError      string               `json:"last_error"`
	Reason         string               `json:"reason"`
	StartedAt      time.Time            `json:"started_at"`
	UpdatedAt      time.Time            `json:"updated_at"`
	CostUSD        float64              `json:"cost_usd"`
	Tokens         task.Tokens          `json:"tokens"`
	Spend          []task.Spend         `json:"spend"`
	PausedUntil    time.Time            `json:"paused_until"`
}

// Cost reads "$0.0123 · 1,200 in / 300 out tokens · executor $0.0100 of
// $5.00", or "" when no runner has spent anything on the task.
func (st stateView) Cost() string {
	if st.CostUSD == 0 && st.Tokens == (task.Tokens{}) {
		return ""
	}
	parts := []string{fmt.Sprintf("$%.4f", st.CostUSD), fmt.Sprintf("%d in / %d out tokens", st.Tokens.Input, st.Tokens.Output)}
	for _, s := range st.Spend {
		p := fmt.Sprintf("%s $%.4f", s.Role, s.CostUSD)
		if s.CapUSD > 0 {
			p += fmt.Sprintf(" of $%.2f", s.CapUSD)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " · ")
}

type subtaskView struct {
	SubtaskID      string `json:"subtask_id"`
	Description    string `json:"description"`
	EstimatedLines int    `json:"estimated_lines"`
}

// messageView is an AMP message's envelope and its payload as JSON.
// holderView is a task.Holder as the pages read it: its message is read
// as a messageView, so one the pages cannot parse as AMP shows all the same.
type holderView struct {
	Role       string       `json:"role"`
	Agent      string       `json:"agent"`
	MsgID      string       `json:"msg_id"`
	Since      time.Time    `json:"since"`
	Unanswered *messageView `json:"unanswered"`
}

type messageView struct {
	MsgID     string          `json:"msg_id"`
	Type      string          `json:"type"`
	From      string          `json:"from"`
	To        string          `json:"to"`
	Timestamp string          `json:"timestamp"`
	Payload   json.RawMessage `json:"payload"`
}

// SubtaskOf reads "2/3", or "–" before the plan has subtasks.
func (st stateView) SubtaskOf() string {
	if len(st.Subtasks) == 0 {
		return "–"
	}
	i := min(st.SubtaskIndex+1, len(st.Subtasks))
	return fmt.Sprintf("%d/%d", i, len(st.Subtasks))
}

// CI says where the task's CI stands, as far as its state tells.
func (st stateView) CI() string {
	switch {
	case st.CIState == task.CIOff:
		return "no CI"
	case st.Pending != nil && st.Pending.Context.CIState != "":
		return st.Pending.Context.CIState
	case st.Status == string(task.StatusCICheck) && st.CIRound > 0:
		return fmt.Sprintf("running (round %d)", st.CIRound)
	case st.Status == string(task.StatusCICheck):
		return fmt.Sprintf("running (round %d)", st.CIRounds+1)
	case st.CIState != "" && st.CIRound > 0:
		return fmt.Sprintf("%s (round %d)", st.CIState, st.CIRound)
	case st.CIRounds > 0:
		return fmt.Sprintf("%d round(s)", st.CIRounds)
	}
	return "–"
}

// taskRow is one line of the tasks page.
type taskRow struct {
	ssot.TaskState
	View stateView
}

type tasksData struct {
	Rows     []taskRow
	Statuses []task.Status
	Filter   tasksFilter
	// Next is the query of the next page; empty on the last.
	Next       string
	MaxRejects int
	Searched   int
}

type tasksFilter struct {
	Status, Risk, Repo, Text string
}

// tasksPage lists tasks newest first, filtered by status, risk, repo and
// text (in the id, description, repo and branch).
func (s *Server) tasksPage(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	f := tasksFilter{Status: q.Get("status"), Risk: q.Get("risk"), Repo: strings.TrimSpace(q.Get("repo")), Text: strings.TrimSpace(q.Get("q"))}
	cursor := q.Get("cursor")
	data := tasksData{Statuses: statuses, Filter: f, MaxRejects: s.maxRejects}
	limit := tasksPerPage
	if f.Text != "" {
		limit = ssot.MaxLimit
	}
	rows, next, err := s.store.TaskList(r.Context(), ssot.TaskFilter{Status: f.Status, Risk: f.Risk, Repo: f.Repo}, ssot.Page{Limit: limit, Cursor: cursor})
	if err != nil {
		s.errorPage(w, r, v, http.StatusBadRequest, "listing tasks: "+err.Error())
		return
	}
	ids := make([]string, len(rows))
	for i, t := range rows {
		ids[i] = t.TaskID
	}
	states, err := s.store.TaskStates(r.Context(), ids)
	if err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	needle := strings.ToLower(f.Text)
	for _, t := range rows {
		var st stateView
		_ = json.Unmarshal(states[t.TaskID], &st)
		if needle != "" && !strings.Contains(strings.ToLower(t.TaskID+"\n"+st.Description+"\n"+t.Repo+"\n"+st.Branch), needle) {
			continue
		}
		data.Rows = append(data.Rows, taskRow{TaskState: t, View: st})
	}
	data.Searched = len(rows)
	if next != "" {
		nq := r.URL.Query()
		nq.Set("cursor", next)
		data.Next = "/tasks?" + nq.Encode()
	}
	d := s.base(w, r, v, "Tasks", "tasks")
	d.Data = data
	s.render(w, r, http.StatusOK, "tasks", d)
}
