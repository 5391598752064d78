package demo

import (
	"fmt"
	"time"

	"github.com/ampflow/ampflow/amp"
)

// The demo's story: the executor writes a greeting script that forgets the
// case of no argument, the reviewer rejects it, the executor fixes it.
const (
	scriptFile   = "hello.sh"
	subtaskID    = "S1"
	planSummary  = "Add hello.sh, a script that greets whoever runs it"
	criterionArg = "hello.sh greets the name given as its first argument"
	criterionNil = "hello.sh greets the world when given no argument"

	firstScript = "#!/bin/sh\necho \"Hello, $1!\"\n"
	fixedScript = "#!/bin/sh\n# Greets the name given, or the world.\necho \"Hello, ${1:-world}!\"\n"
)

// reviewIssue is what the reviewer finds in the first round.
var reviewIssue = amp.Issue{
	Severity:     amp.SeverityCritical,
	File:         scriptFile,
	Line:         2,
	Description:  `called without an argument the script prints "Hello, !"`,
	SuggestedFix: `default the name: echo "Hello, ${1:-world}!"`,
}

// Confidences of the two verdicts; both clear the default minimum of 0.8.
const (
	rejectConfidence  = 0.9
	approveConfidence = 0.95
)

func plan(dir string) amp.TaskDispatch {
	return amp.TaskDispatch{
		Description: planSummary,
		Repo:        dir,
		Branch:      FeatureBranch,
		Subtasks: []amp.Subtask{{
			SubtaskID:      subtaskID,
			Description:    "Write hello.sh: print \"Hello, NAME!\" for the name given",
			EstimatedLines: 3,
		}},
		AcceptanceCriteria: []string{criterionArg, criterionNil},
		RiskLevel:          amp.RiskLow,
		ForbiddenActions:   []string{"push", "touch main"},
	}
}

func boolPtr(b bool) *bool { return &b }

// result is the executor's task_result for the commit it just made.
func result(taskID string, at time.Time, commit string, diff amp.DiffSummary, round int) amp.Message {
	met := []*bool{boolPtr(true), boolPtr(true)}
	note := "hello.sh greets its argument"
	detail := "greet $1"
	if round > 1 {
		note = "fixed the reviewer's issue: no argument now greets the world"
		detail = "default the name to world"
	}
	return amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, taskID, at, &amp.TaskResult{
		SubtaskID:        subtaskID,
		CompletionStatus: amp.StatusComplete,
		DiffSummary:      diff,
		SelfAssessment:   amp.SelfAssessment{CriteriaMet: met, Notes: []string{note}},
		WorkLog: []amp.WorkLogEntry{{
			Timestamp: at.Format(amp.TimestampLayout),
			Action:    "commit " + shortHash(commit),
			File:      scriptFile,
			Detail:    detail,
		}},
		CommitHash: commit,
	})
}

// rejection is the reviewer's first verdict: one critical issue.
func rejection(taskID string, at time.Time) amp.Message {
	return amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, taskID, at, &amp.ReviewVerdict{
		Decision: amp.DecisionRejected,
		CriteriaResults: []amp.CriterionResult{
			{Criterion: criterionArg, Passed: boolPtr(true), Evidence: `./hello.sh Ada prints "Hello, Ada!"`},
			{Criterion: criterionNil, Passed: boolPtr(false), Evidence: `./hello.sh prints "Hello, !"`},
		},
		Issues:     []amp.Issue{reviewIssue},
		Confidence: rejectConfidence,
	})
}

// approval is the reviewer's second verdict.
func approval(taskID string, at time.Time) amp.Message {
	return amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, taskID, at, &amp.ReviewVerdict{
		Decision: amp.DecisionApproved,
		CriteriaResults: []amp.CriterionResult{
			{Criterion: criterionArg, Passed: boolPtr(true), Evidence: `./hello.sh Ada prints "Hello, Ada!"`},
			{Criterion: criterionNil, Passed: boolPtr(true), Evidence: `./hello.sh prints "Hello, world!"`},
		},
		Confidence: approveConfidence,
	})
}

func shortHash(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}

func describeVerdict(v *amp.ReviewVerdict) string {
	s := fmt.Sprintf("%s, confidence %.2f", v.Decision, v.Confidence)
	for _, is := range v.Issues {
		s += fmt.Sprintf("; [%s] %s:%d %s", is.Severity, is.File, is.Line, is.Description)
	}
	return s
}
