package amp

import (
	"fmt"
	"regexp"
	"slices"
)

// protectedBranches may never be the target of a dispatch, by short name or
// full ref.
var protectedBranches = []string{"main", "master", "refs/heads/main", "refs/heads/master"}

const (
	commitHashPattern = `^[0-9a-f]{7,64}$`
)

// payloadRule validates a payload; taskID is the envelope's, for rules that
// tie references to the task.
type payloadRule func(c *checker, path string, v any, taskID string)

var payloadRules = map[Type]payloadRule{
	TypeTaskDispatch:  checkDispatch,
	TypeTaskResult:    checkResult,
	TypeReviewRequest: checkRequest,
	TypeReviewVerdict: checkVerdict,
	TypeEscalation:    checkEscalation,
}

// ProtectedBranch reports whether a dispatch may never name branch.
func ProtectedBranch(branch string) bool { return slices.Contains(protectedBranches, branch) }

func branch(c *checker, path string, v any) {
	text(c, path, v)
	if s, _ := v.(string); ProtectedBranch(s) {
		c.addf(path, "must not be %s (protected branch)", s)
	}
}

var dispatchFields = []field{
	req("description", text),
	req("repo", matching(repoRE, repoWhat)),
	req("branch", branch),
	req("subtasks", arrayOf(1, objectOf([]field{
		req("subtask_id", text),
		req("description", text),
		req("estimated_lines", integer(0, maxInt)),
	}, nil))),
	req("acceptance_criteria", arrayOf(1, text)),
	req("risk_level", oneOf(RiskLow, RiskMedium, RiskHigh)),
	opt("forbidden_actions", arrayOf(0, text)),
	opt("tech_constraints", freeObject),
}

func checkDispatch(c *checker, path string, v any, _ string) {
	c.object(path, v, dispatchFields, nil)
}

var resultFields = []field{
	req("subtask_id", text),
	req("completion_status", oneOf(StatusComplete, StatusPartial, StatusFailed)),
	req("diff_summary", objectOf([]field{
		req("files_changed", arrayOf(0, text)),
		req("lines_added", integer(0, maxInt)),
		req("lines_removed", integer(0, maxInt)),
	}, nil)),
	req("self_assessment", objectOf([]field{
		req("criteria_met", arrayOf(1, boolOrNull)),
		req("notes", arrayOf(0, anyString)),
	}, nil)),
	req("work_log", arrayOf(0, objectOf([]field{
		req("timestamp", timestamp),
		req("action", text),
		req("file", anyString),
		req("detail", anyString),
	}, nil))),
	opt("commit_hash", matching(regexp.MustCompile(commitHashPattern), "a hex git commit hash of 7 to 64 digits")),
	opt("blockers", arrayOf(0, text)),
}

func checkResult(c *checker, path string, v any, _ string) {
	c.object(path, v, resultFields, resultRules)
}

func resultRules(c *checker, path string, m map[string]any) {
	status, _ := m["completion_status"].(string)
	if status != string(StatusPartial) && status != string(StatusFailed) {
		return
	}
	switch b, ok := m["blockers"]; {
	case !ok:
		c.addf(joinKey(path, "blockers"), "required when completion_status is %s", status)
	case isEmptyArray(b):
		c.addf(joinKey(path, "blockers"), "must not be empty when completion_status is %s", status)
	}
}

func isEmptyArray(v any) bool {
	a, ok := v.([]any)
	return ok && len(a) == 0
}

var requestFields = []field{
	req("original_dispatch_ref", msgIDOf(TypeTaskDispatch)),
	req("task_result_ref", msgIDOf(TypeTaskResult)),
	req("review_scope", oneOf(ScopeFull, ScopeIncremental)),
	req("diff_url", text),
	req("reject_count", integer(0, maxInt)),
	opt("coordinator_notes", anyString),
	opt("ci_status", ciStatus),
}

// ciStatus enforces the spec's CI gating: with a failed CI the coordinator
// dispatches a fix instead of asking for a review.
func ciStatus(c *checker, path string, v any) {
	freeObject(c, path, v)
	m, _ := v.(map[string]any)
	for _, k := range sortedKeys(m) {
		if m[k] == "failed" {
			c.add(joinKey(path, k), `must not be "failed": CI failures go back to the executor as a new task_dispatch`)
		}
	}
}

func checkRequest(c *checker, path string, v any, taskID string) {
	c.object(path, v, requestFields, func(c *checker, path string, m map[string]any) {
		sameTask(c, path, m, "original_dispatch_ref", taskID)
		sameTask(c, path, m, "task_result_ref", taskID)
	})
}

var verdictFields = []field{
	req("decision", oneOf(DecisionApproved, DecisionApprovedWithFix, DecisionRejected)),
	req("criteria_results", arrayOf(1, objectOf([]field{
		req("criterion", text),
		req("passed", boolOrNull),
		req("evidence", anyString),
	}, nil))),
	opt("issues", arrayOf(0, objectOf([]field{
		req("severity", oneOf(SeverityCritical, SeverityMajor, SeverityMinor)),
		req("file", text),
		req("line", integer(0, maxInt)),
		req("description", text),
		req("suggested_fix", anyString),
	}, nil))),
	opt("direct_fixes", arrayOf(0, objectOf([]field{
		req("file", text),
		req("change_type", oneOf(ChangeTypo, ChangeLint, ChangeWhitespace, ChangeImportOrder)),
		req("diff_lines", integer(1, 4)),
	}, nil))),
	opt("architecture_notes", anyString),
	req("confidence", number(0, 1)),
}

func checkVerdict(c *checker, path string, v any, _ string) {
	c.object(path, v, verdictFields, verdictRules)
}

func verdictRules(c *checker, path string, m map[string]any) {
	decision, _ := m["decision"].(string)
	requireNonEmpty := func(key string) {
		switch a, ok := m[key]; {
		case !ok:
			c.addf(joinKey(path, key), "required when decision is %s", decision)
		case isEmptyArray(a):
			c.addf(joinKey(path, key), "must not be empty when decision is %s", decision)
		}
	}
	switch Decision(decision) {
	case DecisionRejected:
		requireNonEmpty("issues")
	case DecisionApprovedWithFix:
		requireNonEmpty("direct_fixes")
	}
	if _, ok := m["direct_fixes"]; ok && (decision == string(DecisionApproved) || decision == string(DecisionRejected)) {
		c.addf(joinKey(path, "direct_fixes"), "allowed only when decision is %s", DecisionApprovedWithFix)
	}
	if decision == string(DecisionApproved) || decision == string(DecisionApprovedWithFix) {
		issues, _ := m["issues"].([]any)
		for i, is := range issues {
			obj, _ := is.(map[string]any)
			if sev, _ := obj["severity"].(string); sev == string(SeverityCritical) || sev == string(SeverityMajor) {
				c.add(fmt.Sprintf("%s.severity", joinIndex(joinKey(path, "issues"), i)),
					fmt.Sprintf("%s issues block approval; an %s verdict may only list minor issues", sev, decision))
			}
		}
	}
}

var escalationTypes = []EscalationType{
	EscHallucinationLock, EscAckTimeout, EscBranchViolation, EscCIFailure,
	EscConflict, EscHeartbeatTimeout, EscPermissionDenied, EscUnknown,
}

var escalationFields = []field{
	req("escalation_type", oneOf(escalationTypes...)),
	req("severity", oneOf(SeverityCritical, SeverityWarning, SeverityInfo)),
	req("triggered_by", oneOf(RoleCoordinator, RoleExecutor, RoleReviewer, RoleSystem)),
	req("description", text),
	req("affected_msgs", arrayOf(0, text)),
	req("system_state_snapshot", freeObject),
	opt("suggested_actions", arrayOf(0, text)),
	req("auto_suspended", boolean),
}

func checkEscalation(c *checker, path string, v any, _ string) {
	c.object(path, v, escalationFields, escalationRules)
}

func escalationRules(c *checker, path string, m map[string]any) {
	if sev, _ := m["severity"].(string); sev == string(SeverityCritical) {
		if s, ok := m["auto_suspended"].(bool); ok && !s {
			c.add(joinKey(path, "auto_suspended"), "must be true when severity is critical")
		}
	}
}
