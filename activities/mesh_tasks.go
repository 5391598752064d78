package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// MeshEvents keeps the events ampflow's own tasks emit in the mesh
// (*ssot.DB).
type MeshEvents interface {
	AppendEvents(ctx context.Context, evs []ssot.MeshEvent) error
}

// taskPriority is the document's priority (1 highest) of a risk level.
var taskPriority = map[amp.Risk]int{amp.RiskHigh: 1, amp.RiskMedium: 2, amp.RiskLow: 3}

// TaskEvents are the mesh events of a task's records, as the protocol's
// registry names them: a plan is task.created, an executor's ACK of a
// dispatch task.claimed, a task_result task.completed, an escalation
// task.blocked, and each issue of a review verdict a review.finding. They
// come from ampflow (agent_id "ampflow"), to nobody's inbox, and are
// found by search (type, task_id). Event ids derive from the records',
// so recording a batch again writes each once.
func TaskEvents(taskID string, entries []RecordEntry) []ssot.MeshEvent {
	var out []ssot.MeshEvent
	add := func(id, typ, severity, subject, content string, at time.Time, payload map[string]any) {
		payload["task_id"] = taskID
		body, _ := json.Marshal(payload)
		out = append(out, ssot.MeshEvent{ID: ssot.SystemEventPrefix + "task-" + id, Type: typ, Severity: severity, AgentID: ssot.MeshSender,
			From: ssot.MeshSender, FromID: ssot.MeshSender, Subject: subject, Content: content, TaskID: taskID, CreatedAt: at, Payload: body})
	}
	for _, e := range entries {
		at := e.RecordedAt
		switch e.Kind {
		case ssot.KindEvent:
			var in task.Input
			if !strings.HasPrefix(e.ID, "plan-") || json.Unmarshal(e.Body, &in) != nil {
				continue
			}
			add(e.ID, "task.created", "info", "task.created "+taskID, in.Plan.Description, at, map[string]any{
				"goal": in.Plan.Description, "priority": taskPriority[in.Plan.RiskLevel], "assignee": string(amp.RoleExecutor),
				"repo": in.Plan.Repo, "branch": in.Plan.Branch})
		case ssot.KindAck:
			var a amp.Ack
			err := json.Unmarshal(e.Body, &a)
			if err != nil || a.From != amp.RoleExecutor {
				continue
			}
			if typ, _, ok := amp.ParseMsgID(a.AckOf); !ok || typ != amp.TypeTaskDispatch {
				continue
			}
			// lease_ttl: the task's heartbeat timeout is its policy's; 0
			// here means the policy's.
			add(e.ID, "task.claimed", "info", "task.claimed "+taskID, "", at, map[string]any{
				"agent_id": string(a.From), "lease_ttl": 0, "dispatch": a.AckOf})
		case ssot.KindMessage:
			var m amp.Message
			err := json.Unmarshal(e.Body, &m)
			if err != nil {
				continue
			}
			switch {
			case m.Result() != nil:
				r := m.Result()
				summary := fmt.Sprintf("%s: %d files, +%d -%d", r.CompletionStatus, len(r.DiffSummary.FilesChanged),
					r.DiffSummary.LinesAdded, r.DiffSummary.LinesRemoved)
				if len(r.Blockers) > 0 {
					summary += "; blockers: " + strings.Join(r.Blockers, "; ")
				}
				add(e.ID, "task.completed", "info", "task.completed "+taskID, summary, at, map[string]any{
					"agent_id": string(m.From), "result_summary": summary, "subtask_id": r.SubtaskID, "commit_hash": r.CommitHash})
			case m.Escalation() != nil:
				x := m.Escalation()
				add(e.ID, "task.blocked", severityOf(x.Severity), "task.blocked "+taskID, x.Description, at, map[string]any{
					"agent_id": string(x.TriggeredBy), "blocked_reason": x.Description, "escalation_type": string(x.EscalationType)})
			case m.Verdict() != nil:
				for i, is := range m.Verdict().Issues {
					add(fmt.Sprintf("%s-%d", e.ID, i+1), "review.finding", severityOf(is.Severity), is.File, is.Description+"\n"+is.SuggestedFix, at,
						map[string]any{"reviewer_id": string(m.From), "file_path": is.File, "line_number": is.Line,
							"severity": severityOf(is.Severity), "message": is.Description, "suggestion": is.SuggestedFix,
							"parent_message_id": nil, "verdict": e.ID})
				}
			}
		}
	}
	return out
}

// severityOf maps AMP's severities to the mesh's info, warning and error.
func severityOf(s amp.Severity) string {
	switch s {
	case amp.SeverityCritical, amp.SeverityMajor:
		return "error"
	case amp.SeverityWarning, amp.SeverityMinor:
		return "warning"
	}
	return "info"
}

// ProgressEvent is the task.progress mesh event of an agent's heartbeat
// with a note: the note is the document's summary. progress_percent is
// left out: a heartbeat carries no measure of how far the work is, and
// reading the task's state for one would make every heartbeat cost a
// query. The id holds the time, so two notes a nanosecond apart differ.
func ProgressEvent(taskID string, in task.HeartbeatInput, at time.Time) ssot.MeshEvent {
	agent := string(in.From)
	payload := map[string]any{"task_id": taskID, "agent_id": agent, "summary": in.Note}
	body, _ := json.Marshal(payload)
	return ssot.MeshEvent{ID: fmt.Sprintf("%stask-progress-%s-%d", ssot.SystemEventPrefix, taskID, at.UnixNano()), Type: "task.progress", Severity: "info",
		AgentID: agent, From: ssot.MeshSender, FromID: ssot.MeshSender, Subject: "task.progress " + taskID, Content: in.Note,
		TaskID: taskID, CreatedAt: at, Payload: body}
}

// Task events of the mesh: the registry's task.claimed, an agent taking
// a task; and task.delivered, ampflow's record of an agent's ACK, which
// is not in the registry, so no agent posts one.
const (
	TypeTaskClaimed   = "task.claimed"
	TypeTaskDelivered = "task.delivered"
)

// DeliveredEvent records that agent, acting as role, acknowledged msgID,
// its task's dispatch or review request: a task.delivered event that
// ampflow (agent_id "ampflow") stores from the agent, to nobody's inbox. Only
// these say which agent a task of ampflow's went to: a recovered agent's
// tasks are sent again, and its test results may file bug tasks. The id
// derives from the message and the agent, so an ACK sent again records
// it once.
func DeliveredEvent(taskID, msgID, agent string, role amp.Role, at time.Time) ssot.MeshEvent {
	sum := sha256.Sum256([]byte(msgID + "\x00" + agent))
	payload, _ := json.Marshal(map[string]any{"task_id": taskID, "agent_id": agent, "from": agent, "role": string(role),
		"ack_of": msgID})
	return ssot.MeshEvent{ID: ssot.SystemEventPrefix + "delivered-" + hex.EncodeToString(sum[:12]), Type: TypeTaskDelivered,
		Severity: "info", AgentID: ssot.MeshSender, From: agent, FromID: agent, Subject: TypeTaskDelivered + " " + taskID,
		Content: string(role) + " " + agent + " acknowledged " + msgID, TaskID: taskID, CreatedAt: at, Payload: payload}
}

// DeliveryOf reads a delivery record DeliveredEvent made: the agent and its
// role; false for any other event.
func DeliveryOf(e ssot.MeshEvent) (agent string, role amp.Role, ok bool) {
	if e.Type != TypeTaskDelivered || e.AgentID != ssot.MeshSender || e.From == ssot.MeshSender || !strings.HasPrefix(e.ID, ssot.SystemEventPrefix+"delivered-") {
		return "", "", false
	}
	var p struct {
		Role amp.Role `json:"role"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	return e.From, p.Role, true
}
