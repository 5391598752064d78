// Package chattest holds what the Slack and Telegram tests share: decisions
// to render and post, a fake of the workflows, and test helpers.
package chattest

import (
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// RaisedAt is when every fixture decision was raised.
var RaisedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// PlanDecision is the simplest decision: a plan waiting for approval.
func PlanDecision() decision.Decision {
	return decision.Decision{
		ID:       "T-2026-001-d1",
		Subject:  "T-2026-001",
		Kind:     task.KindPlanApproval,
		Prompt:   "Approve the plan of 2 subtasks?",
		RaisedAt: RaisedAt,
		Options: []decision.Option{
			{ID: decision.OptApprove, Label: "Approve"},
			{ID: decision.OptReject, Label: "Reject", NoteRequired: true},
		},
		Context: decision.Context{
			Description: "Add rate limiting to the public API",
			Repo:        "acme/api",
			Branch:      "feature/rate-limit",
			Risk:        amp.RiskMedium,
		},
	}
}

// Digest is the digest of PlanDecision; Digest2 that of a changed plan.
var (
	Digest  = "5e1f" + strings.Repeat("0", 56) + "d1a1"
	Digest2 = "9c0d" + strings.Repeat("0", 56) + "d1a2"
)

// QuorumDecision is PlanDecision with a digest, an expiry, and two
// approvals required.
func QuorumDecision() decision.Decision {
	d := PlanDecision()
	d.Digest = Digest
	d.Required = 2
	d.ExpiresAt = RaisedAt.Add(24 * time.Hour)
	d.OnExpiry = decision.OptReject
	return d
}

// LockDecision has everything a decision can show, and text that needs
// escaping.
func LockDecision() decision.Decision {
	conf := 0.62
	esc := amp.Message{
		MsgID:           "escalation-T-2026-002-1740576727001",
		ProtocolVersion: "1.0",
		Type:            amp.TypeEscalation,
		From:            amp.RoleSystem,
		To:              amp.RoleAdmin,
		TaskID:          "T-2026-002",
		Timestamp:       "2026-03-01T12:00:00Z",
		Payload: &amp.Escalation{
			EscalationType: amp.EscHallucinationLock,
			Severity:       amp.SeverityCritical,
			TriggeredBy:    amp.RoleSystem,
			Description:    "Review rejected 3 times: <limit> & retry logic still wrong",
			AffectedMsgs:   []string{"review_verdict-T-2026-002-1740576727000"},
			SuggestedActions: []string{
				"Redispatch with a narrower scope", "Terminate and split the task",
			},
			AutoSuspended: true,
		},
	}
	return decision.Decision{
		ID:         "T-2026-002-d4",
		Subject:    "T-2026-002",
		Kind:       task.KindHallucinationLock,
		Prompt:     "The review loop is locked. What now?",
		RaisedAt:   RaisedAt,
		Escalation: &esc,
		Options: []decision.Option{
			{ID: task.OptRedispatch, Label: "Redispatch"},
			{ID: task.OptAccept, Label: "Accept anyway", NoteRequired: true},
			{ID: task.OptTerminate, Label: "Terminate"},
		},
		Context: decision.Context{
			Description: "Retry failed webhooks with backoff",
			Repo:        "acme/hooks",
			Branch:      "fix/retry",
			Risk:        amp.RiskHigh,
			Subtask:     "S2",
			RejectCount: 3,
			CIState:     "failed",
			Confidence:  &conf,
			Issues: []amp.Issue{
				{Severity: amp.SeverityCritical, File: "retry/backoff.go", Line: 42, Description: "Backoff never caps: a<b>c"},
				{Severity: amp.SeverityMinor, File: "README.md", Description: "Typo"},
			},
			Blockers:  []string{"CI job `lint` fails"},
			Suggested: esc.Escalation().SuggestedActions,
		},
	}
}

// Outcome is d decided: option chosen by by via channel, four minutes
// after it was raised.
func Outcome(d decision.Decision, option, by, channel, note string) decision.Outcome {
	return decision.Outcome{DecisionID: d.ID, Kind: d.Kind, Option: option, Note: note, By: by, Channel: channel,
		At: RaisedAt.Add(4 * time.Minute)}
}

// GateDecision is a decision of the action gate: not a task's, so its
// context is in Extra.
func GateDecision() decision.Decision {
	return decision.Decision{
		ID:       "gate-gate_01jt-d1",
		Subject:  "gate-gate_01jt",
		Kind:     "gate_signal",
		Prompt:   "Agent resume-tailor proposes: Send tailored resume to applicant",
		RaisedAt: RaisedAt,
		Digest:   Digest,
		Options: []decision.Option{
			{ID: decision.OptApprove, Label: "Approve"},
			{ID: decision.OptReject, Label: "Reject"},
		},
		Context: decision.Context{
			Description: "Rewrote resume for Senior PM role at <Stripe>",
			Risk:        amp.RiskMedium,
			Extra: map[string]any{
				"gate_id": "gate_01jt", "kind": "signal", "summary": "Rewrote resume for Senior PM role at <Stripe>",
				"proposed_action": "Send tailored resume to applicant", "agent_id": "resume-tailor", "project_id": "job-search",
				"run_id": "run_01jt4k", "model": "claude-sonnet-4-6", "artifacts": 1,
				"cost":    "$0.014736 reported, $0.014736 computed · 1842 in / 614 out tokens",
				"reasons": []any{"the agent declared gate_required"},
			},
		},
	}
}

// ToolCallDecision is a tool_call decision as the task raises it: the
// call's tool, kind and canonical input in Context.Extra. input is the
// tool's input as canonical JSON.
func ToolCallDecision(tool, kind, input string) decision.Decision {
	return decision.Decision{
		ID:        "T-2026-045-d3",
		Subject:   "T-2026-045",
		Kind:      task.KindToolCall,
		Prompt:    "executor (codex) wants to run " + tool + " (" + kind + ") in /srv/wt/T-2026-045: " + input,
		RaisedAt:  RaisedAt,
		ExpiresAt: RaisedAt.Add(10 * time.Minute),
		OnExpiry:  task.OptDeny,
		Required:  2,
		Digest:    Digest,
		Options: []decision.Option{
			{ID: task.OptAllowOnce, Label: "Allow once"},
			{ID: task.OptAllowTool, Label: "Allow this tool for the rest of the task"},
			{ID: task.OptDeny, Label: "Deny", NoteRequired: true},
		},
		Context: decision.Context{
			Description: "Add rate limiting to the public API",
			Repo:        "acme/api",
			Branch:      "feature/rate-limit",
			Risk:        amp.RiskMedium,
			Extra: map[string]any{"tool_call": "T-2026-045-tc4", "tool": tool, "kind": kind, "input": input,
				"cwd": "/srv/wt/T-2026-045", "rule": "ask-network", "reason": "network access <needs> an admin & a reason", "agent": "exec",
				"role": "executor", "cli": "codex", "risk": "high"},
		},
	}
}
