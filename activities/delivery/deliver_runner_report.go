package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// What a run reports: the executor's result and the reviewer's verdict,
// read from its final message and git, and submitted as the agent.

// executorReport is the final report the executor's prompt asks for.
type executorReport struct {
	CriteriaMet []*bool  `json:"criteria_met"`
	Notes       []string `json:"notes"`
	Summary     string   `json:"summary"`
}

// submitResult commits what the run left, reads the result from git, and
// submits the task_result as the executor.
func (d *Delivery) submitResult(ctx context.Context, in activities.DeliverInput, dir string, st *runState, out runner.Outcome) error {
	m := in.Message
	p := m.Dispatch()
	if _, err := runner.Salvage(ctx, dir, "", "ampflow: commit what the executor left uncommitted on "+m.MsgID); err != nil {
		return fmt.Errorf("committing the executor's work: %w", err)
	}
	if err := runner.FetchBack(ctx, in.Repo, dir, p.Branch); err != nil {
		// Not retried: a retry would run the CLI again, and a branch
		// checked out in the user's checkout stays so until someone acts.
		return failed(fmt.Sprintf("bringing the executor's branch %s into %s: %v; if it is checked out there, "+
			"switch that checkout to another branch (git -C %s switch --detach), then redispatch", p.Branch, in.Repo, err, in.Repo), "", err)
	}
	head, err := activities.RunGit(ctx, "git", dir, false, "rev-parse", "HEAD")
	if err != nil {
		return fmt.Errorf("reading the executor's commit: %w", err)
	}
	commit := strings.TrimSpace(string(head))
	d.pushBack(ctx, st.repo, p.Branch, commit, m)
	res := &amp.TaskResult{CompletionStatus: amp.StatusComplete, CommitHash: commit, WorkLog: st.workLog}
	if res.WorkLog == nil {
		res.WorkLog = []amp.WorkLogEntry{}
	}
	if len(p.Subtasks) > 0 {
		res.SubtaskID = p.Subtasks[0].SubtaskID
	}
	reply := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, m.TaskID, time.Now(), res)
	reply.ContextRef = []string{m.MsgID}
	if d.Git != nil {
		chk, err := d.Git.CheckResult(ctx, activities.CheckResultInput{TaskID: m.TaskID, MsgID: reply.MsgID, Repo: in.Repo, Branch: p.Branch, Commit: commit})
		if err != nil {
			return fmt.Errorf("reading the executor's diff: %w", err)
		}
		res.DiffSummary = chk.Actual
	}
	if res.DiffSummary.FilesChanged == nil {
		res.DiffSummary.FilesChanged = []string{}
	}
	res.SelfAssessment = selfAssessment(out.Text, len(p.AcceptanceCriteria))
	if s := failedSummary(st.failed); s != "" {
		res.SelfAssessment.Notes = append([]string{s}, res.SelfAssessment.Notes...)
	}
	return d.submitReply(ctx, m, reply)
}

// selfAssessment reads the executor's report from its final text: one
// true, false or null per criterion; without a readable report, every
// criterion is null with a note.
func selfAssessment(text string, criteria int) amp.SelfAssessment {
	var r executorReport
	err := lastJSON(text, &r)
	if err == nil && len(r.CriteriaMet) == criteria {
		notes := r.Notes
		if notes == nil {
			notes = []string{}
		}
		if r.Summary != "" {
			notes = append(notes, r.Summary)
		}
		return amp.SelfAssessment{CriteriaMet: r.CriteriaMet, Notes: notes}
	}
	why := "its final message ends with no JSON object"
	switch {
	case err != nil && !errors.Is(err, errNoJSON):
		why = "its final JSON object is not the report: " + child.OneLine(err.Error())
	case err == nil:
		why = fmt.Sprintf("its criteria_met has %d values for %d criteria", len(r.CriteriaMet), criteria)
	}
	return amp.SelfAssessment{CriteriaMet: make([]*bool, criteria),
		Notes: []string{"the executor gave no readable final report (" + why + "); ampflow read the result from git"}}
}

// submitVerdict submits the reviewer's final report as its review_verdict;
// a report the task refuses gets one resumed turn to fix it.
func (d *Delivery) submitVerdict(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput, dir string, st *runState, out runner.Outcome, spec runner.Spec) error {
	m := in.Message
	for turn := 0; ; turn++ {
		var v amp.ReviewVerdict
		err := lastJSON(out.Text, &v)
		if err == nil {
			reply := amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, m.TaskID, time.Now(), &v)
			reply.ContextRef = []string{m.MsgID}
			err = d.submitReply(ctx, m, reply)
			var refused *refusedReply
			if err == nil || !errors.As(err, &refused) {
				return err
			}
		}
		if turn > 0 || st.session == "" {
			return failed(fmt.Sprintf("the reviewer runner (%s) gave no valid review_verdict for %s: %s", a.Runner, m.MsgID, child.OneLine(err.Error())), "", nil)
		}
		spec.SessionID = st.session
		spec.Prompt = "Your final report was not a valid review_verdict: " + child.OneLine(err.Error()) +
			". Answer again with only the JSON object, as asked."
		if out, err = st.run(spec); err != nil {
			if r := d.budgetRefused(a, m, err); r != nil {
				return r
			}
			return fmt.Errorf("resuming the %s runner on %s: %w", a.Runner, m.MsgID, err)
		}
		if !out.Succeeded() {
			if over := st.failedOver(); over != nil {
				return over
			}
			return d.runFailedOn(ctx, a, in, dir, out, st.limit)
		}
	}
}

// submitReply submits a reply as the agent; the task's refusal is kept in
// the error log and fails the delivery.
func (d *Delivery) submitReply(ctx context.Context, m amp.Message, reply amp.Message) error {
	raw, err := json.Marshal(reply)
	if err != nil {
		return fmt.Errorf("encoding the %s's reply to %s: %w", m.To, m.MsgID, err)
	}
	if _, err := d.Submit.Submit(ctx, raw); err != nil {
		switch task.ErrorCode(err) {
		case task.CodeUnavailable:
			return fmt.Errorf("handing the %s's reply to task %s: %w", m.To, m.TaskID, err)
		case task.CodeFinished:
			// Not the agent's fault, and no retry makes it wanted.
			return failed(fmt.Sprintf("the %s's reply to %s came after the task ended: %v", m.To, m.MsgID, err), "", err)
		}
		return d.refuse(raw, fmt.Sprintf("the task refused the %s runner's reply to %s: %s", m.To, m.MsgID, child.OneLine(err.Error())))
	}
	return nil
}

// lastJSON decodes the last JSON object in text (a report that ends the
// agent's final message, bare or in a fenced block).
func lastJSON(text string, v any) error {
	for end := strings.LastIndex(text, "}"); end >= 0; end = strings.LastIndex(text[:end], "}") {
		for start := strings.LastIndex(text[:end], "{"); start >= 0; start = strings.LastIndex(text[:start], "{") {
			if json.Valid([]byte(text[start : end+1])) {
				return json.Unmarshal([]byte(text[start:end+1]), v)
			}
		}
	}
	return errNoJSON
}

// errNoJSON: the final message holds no JSON object.
var errNoJSON = errors.New("no JSON object in the final message")
