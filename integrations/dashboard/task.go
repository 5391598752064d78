package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/chat"
)

// maxRecords bounds the records a task page lists.
const maxRecords = 20000

// recordView is one line of a task's timeline; its body is fetched when
// opened.
type recordView struct {
	ID, Kind, Summary string
	Seq               int64
	At                timeView
}

// recordFields are what a timeline line names of a record's body.
type recordFields struct {
	MsgID   string          `json:"msg_id"`
	Type    string          `json:"type"`
	From    string          `json:"from"`
	To      string          `json:"to"`
	Prompt  string          `json:"prompt"`
	Kind    string          `json:"kind"`
	Option  string          `json:"option"`
	By      string          `json:"by"`
	Channel string          `json:"channel"`
	Reason  string          `json:"reason"`
	Note    string          `json:"note"`
	Status  string          `json:"status"`
	Payload json.RawMessage `json:"payload"`
	// Plan and Coordinator are a task's start record.
	Plan        json.RawMessage `json:"plan"`
	Coordinator string          `json:"coordinator"`
}

func summarize(f recordFields) string {
	var parts []string
	if f.Type != "" {
		parts = append(parts, f.Type)
	}
	if f.From != "" || f.To != "" {
		parts = append(parts, f.From+" → "+f.To)
	}
	if len(f.Plan) > 0 {
		parts = append(parts, "plan from "+f.Coordinator)
	}
	if f.Kind != "" && f.Type == "" {
		parts = append(parts, f.Kind)
	}
	if f.Prompt != "" {
		parts = append(parts, chat.Prompt(decision.Decision{Kind: decision.Kind(f.Kind), Prompt: f.Prompt}))
	}
	if f.Option != "" {
		s := "outcome: " + f.Option
		if f.By != "" {
			s += " by " + f.By
		}
		if f.Channel != "" {
			s += " via " + f.Channel
		}
		parts = append(parts, s)
	}
	for _, s := range []string{f.Status, f.Reason, f.Note} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " · ")
}

type diffView struct {
	MsgID        string
	FilesChanged []string
	LinesAdded   int
	LinesRemoved int
}

type taskData struct {
	ssot.TaskState
	View       stateView
	Records    []recordView
	More       bool
	Criteria   []string
	Diff       *diffView
	Head       ssot.Head
	Verified   bool
	VerifyErr  string
	VerifiedAt timeView
	Decision   *decisionView
	MaxRejects int
	// ReplanJSON is the remaining subtasks, the replan form's start.
	ReplanJSON string
	Ended      bool
	Refusals   []refusalView
	Transcript transcriptView
	// CIRounds are the task's CI rounds, newest first.
	CIRounds []ssot.CIRound
}

// maxRefusals bounds the refused inputs a task page lists, newest first;
// maxRaw bounds how much of each is shown.
const (
	maxRefusals = 100
	maxRaw      = 4 << 10
)

type refusalView struct {
	Seq                 int64
	At                  timeView
	Source, Reason, Raw string
	// Cut counts the bytes of the input not shown.
	Cut int
}

// taskPage shows one task: its state, plan, diff, outbox, chain and the
// whole timeline of its record.
func (s *Server) taskPage(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	ctx := r.Context()
	st, err := s.store.Task(ctx, id)
	if errors.Is(err, ssot.ErrNotFound) {
		s.errorPage(w, r, v, http.StatusNotFound, fmt.Sprintf("No task %s in the record.", id))
		return
	}
	if err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	data := taskData{TaskState: st, MaxRejects: s.maxRejects}
	_ = json.Unmarshal(st.State, &data.View)
	data.Ended = st.Status == string(task.StatusDone) || st.Status == string(task.StatusTerminated)
	if data.Records, data.More, err = s.timeline(ctx, id, &data); err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	if data.Head, err = s.store.Head(ctx, id); err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	var at time.Time
	data.VerifyErr, at = s.verify(ctx, id, data.Head)
	data.Verified, data.VerifiedAt = data.VerifyErr == "", newTimeView(at)
	if data.Transcript, err = s.transcript(ctx, id); err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	rounds, err := ssot.CIRounds(ctx, s.store, id)
	if err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	for i := len(rounds) - 1; i >= 0; i-- {
		data.CIRounds = append(data.CIRounds, rounds[i])
	}
	refused, err := s.store.TaskRefusals(ctx, id, maxRefusals)
	if err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	for _, e := range refused {
		rv := refusalView{Seq: e.Seq, At: newTimeView(e.RecordedAt), Source: e.Source, Reason: e.Reason, Raw: e.Raw}
		if len(rv.Raw) > maxRaw {
			rv.Cut, rv.Raw = len(rv.Raw)-maxRaw, strings.ToValidUTF8(rv.Raw[:maxRaw], "")
		}
		data.Refusals = append(data.Refusals, rv)
	}
	for _, p := range st.Pending {
		var d decision.Decision
		if json.Unmarshal(p.Body, &d) == nil {
			if d.Subject == "" {
				d.Subject = id
			}
			dv := newDecisionView(d, "/tasks/"+id)
			data.Decision = &dv
			break
		}
	}
	if rest := data.View.Subtasks[min(data.View.SubtaskIndex, len(data.View.Subtasks)):]; len(rest) > 0 {
		b, _ := json.MarshalIndent(rest, "", "  ")
		data.ReplanJSON = string(b)
	}
	d := s.base(w, r, v, id, "tasks")
	d.Task = id
	d.Data = data
	s.render(w, r, http.StatusOK, "task", d)
}

// timeline reads a task's records in chain order and picks out the plan's
// acceptance criteria and the newest result's diff summary.
func (s *Server) timeline(ctx context.Context, id string, data *taskData) ([]recordView, bool, error) {
	var out []recordView
	cursor := ""
	for {
		recs, next, err := s.store.History(ctx, id, ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			return nil, false, fmt.Errorf("reading the record of %s: %w", id, err)
		}
		for _, rec := range recs {
			var f recordFields
			_ = json.Unmarshal(rec.Body, &f)
			if len(f.Plan) > 0 && data.Criteria == nil {
				var p struct {
					Criteria []string `json:"acceptance_criteria"`
				}
				if json.Unmarshal(f.Plan, &p) == nil {
					data.Criteria = p.Criteria
				}
			}
			switch amp.Type(f.Type) {
			case amp.TypeTaskDispatch:
				var p struct {
					Criteria []string `json:"acceptance_criteria"`
				}
				if json.Unmarshal(f.Payload, &p) == nil && data.Criteria == nil {
					data.Criteria = p.Criteria
				}
			case amp.TypeTaskResult:
				var p struct {
					Diff amp.DiffSummary `json:"diff_summary"`
				}
				if json.Unmarshal(f.Payload, &p) == nil {
					data.Diff = &diffView{MsgID: f.MsgID, FilesChanged: p.Diff.FilesChanged, LinesAdded: p.Diff.LinesAdded, LinesRemoved: p.Diff.LinesRemoved}
				}
			}
			out = append(out, recordView{ID: rec.ID, Kind: rec.Kind, Seq: rec.Seq, At: newTimeView(rec.RecordedAt), Summary: summarize(f)})
		}
		if next == "" {
			return out, false, nil
		}
		if len(out) >= maxRecords {
			return out, true, nil
		}
		cursor = next
	}
}

type recordData struct {
	ssot.Record
	Pretty string
}

// recordBody shows one record's body: a fragment for the timeline's
// opened entry, or a page of its own.
func (s *Server) recordBody(w http.ResponseWriter, r *http.Request, v viewer) {
	rec, err := s.store.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, ssot.ErrNotFound) {
		s.errorPage(w, r, v, http.StatusNotFound, "No such record.")
		return
	}
	if err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	var buf bytes.Buffer
	if json.Indent(&buf, rec.Body, "", "  ") != nil {
		buf.Reset()
		buf.Write(rec.Body)
	}
	d := s.base(w, r, v, rec.ID, "record")
	d.Data = recordData{Record: rec, Pretty: buf.String()}
	s.render(w, r, http.StatusOK, "record", d)
}

// cancel ends a task at an admin's word.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	back := "/tasks/" + id
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if reason == "" {
		s.flashBack(w, r, back, "Cancel needs a reason.")
		return
	}
	res, err := s.actions.Cancel(r.Context(), id, task.CancelInput{Reason: reason, By: v.Name})
	if err != nil {
		s.flashBack(w, r, back, "Not cancelled: "+errorText(err))
		return
	}
	s.log.Info("task cancelled on the dashboard", "task_id", id, "by", v.Name)
	s.flashBack(w, r, back, fmt.Sprintf("Cancelled %s: it is %s.", id, res.Status))
}

// replan replaces the task's subtasks from the current one on.
func (s *Server) replan(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	back := "/tasks/" + id
	var subtasks []amp.Subtask
	dec := json.NewDecoder(strings.NewReader(r.PostForm.Get("subtasks")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&subtasks); err != nil || len(subtasks) == 0 {
		s.flashBack(w, r, back, "Not replanned: subtasks must be a JSON array of {subtask_id, description, estimated_lines}.")
		return
	}
	res, err := s.actions.Replan(r.Context(), id, task.ReplanInput{Subtasks: subtasks, By: v.Name, Note: strings.TrimSpace(r.PostForm.Get("note"))})
	if err != nil {
		s.flashBack(w, r, back, "Not replanned: "+errorText(err))
		return
	}
	s.log.Info("task replanned on the dashboard", "task_id", id, "by", v.Name, "subtasks", len(subtasks))
	s.flashBack(w, r, back, fmt.Sprintf("Replanned %s with %d subtask(s): it is %s.", id, len(subtasks), res.Status))
}

func errorText(err error) string {
	var te *task.Error
	if errors.As(err, &te) {
		return te.Message
	}
	return err.Error()
}
