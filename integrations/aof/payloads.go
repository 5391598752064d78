package aof

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ampflow/ampflow/amp"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// parsePayload validates m's payload by its type and sets it on m. A
// payload that fails its schema rejects the message as invalid_envelope;
// a payload taskId other than the envelope's as taskId_mismatch.
func parsePayload(m *wf.Message, p map[string]json.RawMessage) *Rejection {
	var fs []amp.FieldError
	add := func(k string, err error) {
		if err != nil {
			fs = append(fs, field("payload."+k, "%s", err))
		}
	}
	var payloadTask string
	switch m.Type {
	case wf.TypeCompletionReport:
		c := &wf.CompletionReport{}
		o, err := str(p, "outcome")
		if err == nil && !slices.Contains(wf.Outcomes(), wf.Outcome(o)) {
			err = problem(fmt.Sprintf("%q is not one of done, blocked, needs_review, partial", o))
		}
		add("outcome", err)
		c.Outcome = wf.Outcome(o)
		c.SummaryRef, err = nonEmpty(p, "summaryRef")
		add("summaryRef", err)
		c.HandoffRef, err = optStr(p, "handoffRef")
		add("handoffRef", err)
		c.Deliverables, err = stringList(p, "deliverables")
		add("deliverables", err)
		c.Tests, err = tests(p)
		add("tests", err)
		c.Blockers, err = stringList(p, "blockers")
		add("blockers", err)
		if err == nil && c.Outcome == wf.OutcomeBlocked && len(c.Blockers) == 0 {
			add("blockers", problem("required for outcome blocked"))
		}
		c.Notes, err = str(p, "notes")
		add("notes", err)
		m.Completion = c
	case wf.TypeStatusUpdate:
		s := &wf.StatusUpdate{}
		var err error
		s.TaskID, err = taskID(p, "taskId")
		add("taskId", err)
		payloadTask = s.TaskID
		s.AgentID, err = nonEmpty(p, "agentId")
		add("agentId", err)
		st, err := optStr(p, "status")
		if err == nil && st != "" {
			var ok bool
			if s.Status, ok = wf.ParseStatus(st); !ok {
				err = problem(fmt.Sprintf("%q is not a task status", st))
			}
		}
		add("status", err)
		s.Progress, err = optStr(p, "progress")
		add("progress", err)
		s.Notes, err = optStr(p, "notes")
		add("notes", err)
		if s.Blockers, err = stringList(p, "blockers"); len(s.Blockers) == 0 {
			s.Blockers = nil
		}
		add("blockers", err)
		if len(fs) == 0 && s.Status == "" && s.Progress == "" && s.Notes == "" && len(s.Blockers) == 0 {
			fs = append(fs, field("payload", "at least one of status, progress, blockers or notes is required"))
		}
		m.Status = s
	case wf.TypeHandoffRequest:
		h := &wf.HandoffRequest{}
		var err error
		h.TaskID, err = taskID(p, "taskId")
		add("taskId", err)
		payloadTask = h.TaskID
		h.ParentTaskID, err = taskID(p, "parentTaskId")
		if err == nil && h.ParentTaskID == m.TaskID {
			err = problem("a task cannot be its own parent")
		}
		add("parentTaskId", err)
		h.FromAgent, err = nonEmpty(p, "fromAgent")
		add("fromAgent", err)
		h.ToAgent, err = nonEmpty(p, "toAgent")
		add("toAgent", err)
		for k, dst := range map[string]*[]string{"acceptanceCriteria": &h.AcceptanceCriteria, "expectedOutputs": &h.ExpectedOutputs,
			"contextRefs": &h.ContextRefs, "constraints": &h.Constraints} {
			*dst, err = stringList(p, k)
			if err != nil && k == "acceptanceCriteria" {
				// Invalid acceptance criteria do not stop a handoff: the
				// schema error is logged with it and the list is empty.
				m.Warnings = append(m.Warnings, "payload.acceptanceCriteria: "+err.Error())
				*dst, err = []string{}, nil
			}
			add(k, err)
		}
		if _, err = datetime(p, "dueBy"); err == nil {
			h.DueBy, _ = str(p, "dueBy")
		}
		add("dueBy", err)
		m.Handoff = h
	case wf.TypeHandoffAccepted, wf.TypeHandoffRejected:
		r := &wf.HandoffReply{}
		var err error
		r.TaskID, err = taskID(p, "taskId")
		add("taskId", err)
		payloadTask = r.TaskID
		if raw, ok := p["accepted"]; !ok {
			add("accepted", errRequired)
		} else if json.Unmarshal(raw, &r.Accepted) != nil {
			add("accepted", problem("must be true or false"))
		}
		r.Reason, err = optStr(p, "reason")
		add("reason", err)
		m.Reply = r
	}
	fs = append(fs, bounds(m)...)
	if len(fs) > 0 {
		slices.SortFunc(fs, func(a, b amp.FieldError) int { return strings.Compare(a.Path, b.Path) })
		return reject(wf.ReasonInvalidEnvelope, fs...)
	}
	if payloadTask != "" && payloadTask != m.TaskID {
		return reject(wf.ReasonTaskIDMismatch, field("payload.taskId", "%q is not the envelope's taskId %q", payloadTask, m.TaskID))
	}
	return nil
}

func tests(p map[string]json.RawMessage) (wf.TestReport, error) {
	raw, ok := p["tests"]
	if !ok || string(raw) == "null" {
		return wf.TestReport{}, errRequired
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return wf.TestReport{}, problem("must be an object {total, passed, failed}")
	}
	var t wf.TestReport
	var bad []string
	for k, dst := range map[string]*int{"total": &t.Total, "passed": &t.Passed, "failed": &t.Failed} {
		v, ok := o[k]
		if !ok || json.Unmarshal(v, dst) != nil || *dst < 0 {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return t, problem(strings.Join(bad, ", ") + ": required, a whole number at least 0")
	}
	return t, nil
}

// Limits of a message's text, so that no task's state, and no activity
// input that carries it, nears Temporal's payload limit (2 MB): each
// text at most MaxText bytes, each list at most MaxItems items, an agent
// name at most MaxName bytes, and the payload as a whole at most
// MaxPayload bytes of JSON.
const (
	MaxText    = 8 << 10
	MaxItems   = 100
	MaxName    = 256
	MaxPayload = 64 << 10
	// MaxBody bounds a created task's body.
	MaxBody = 64 << 10
)

// bounds names each field of m's payload past its limit.
func bounds(m *wf.Message) []amp.FieldError {
	var fs []amp.FieldError
	text := func(path, s string, limit int) {
		if len(s) > limit {
			fs = append(fs, field(path, "%d bytes: at most %d", len(s), limit))
		}
	}
	list := func(path string, l []string) {
		if len(l) > MaxItems {
			fs = append(fs, field(path, "%d items: at most %d", len(l), MaxItems))
		}
		for i, s := range l {
			text(fmt.Sprintf("%s[%d]", path, i), s, MaxText)
		}
	}
	switch {
	case m.Completion != nil:
		c := m.Completion
		text("payload.summaryRef", c.SummaryRef, MaxText)
		text("payload.handoffRef", c.HandoffRef, MaxText)
		text("payload.notes", c.Notes, MaxText)
		list("payload.deliverables", c.Deliverables)
		list("payload.blockers", c.Blockers)
	case m.Status != nil:
		u := m.Status
		text("payload.agentId", u.AgentID, MaxName)
		text("payload.progress", u.Progress, MaxText)
		text("payload.notes", u.Notes, MaxText)
		list("payload.blockers", u.Blockers)
	case m.Handoff != nil:
		h := m.Handoff
		text("payload.fromAgent", h.FromAgent, MaxName)
		text("payload.toAgent", h.ToAgent, MaxName)
		list("payload.acceptanceCriteria", h.AcceptanceCriteria)
		list("payload.expectedOutputs", h.ExpectedOutputs)
		list("payload.contextRefs", h.ContextRefs)
		list("payload.constraints", h.Constraints)
	case m.Reply != nil:
		text("payload.reason", m.Reply.Reason, MaxText)
	}
	return fs
}
