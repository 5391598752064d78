package task

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
)

func TestBranchFor(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"Add MemberCount to Dial", "ampflow/add-membercount-to-dial"},
		{"  Fix: crash on  empty input!! ", "ampflow/fix-crash-on-empty-input"},
		{"Überprüfe café", "ampflow/berpr-fe-caf"},
		{"!!!", "ampflow/task"},
		{"", "ampflow/task"},
		{strings.Repeat("word ", 30), "ampflow/" + strings.TrimSuffix(strings.Repeat("word-", 9), "-")},
		{strings.Repeat("x", 60), "ampflow/" + strings.Repeat("x", 48)},
	} {
		if got := BranchFor(tc.text); got != tc.want {
			t.Errorf("BranchFor(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestBriefPlan(t *testing.T) {
	p := Brief{Text: "Add MemberCount to Dial", Repo: "/srv/dial"}.Plan()
	if p.Branch != "ampflow/add-membercount-to-dial" || p.RiskLevel != amp.RiskLow || len(p.Subtasks) != 1 ||
		p.Subtasks[0].Description != "Add MemberCount to Dial" || len(p.AcceptanceCriteria) != 1 || p.AcceptanceCriteria[0] != "Add MemberCount to Dial" {
		t.Fatalf("plan %+v", p)
	}
	p = Brief{Text: "Fix it", Details: "It breaks.", Repo: "/r", Branch: "fix/it", Criteria: []string{"a", "b"}, Risk: amp.RiskHigh}.Plan()
	if p.Description != "Fix it\n\nIt breaks." || p.Branch != "fix/it" || len(p.AcceptanceCriteria) != 2 || p.RiskLevel != amp.RiskHigh {
		t.Fatalf("plan %+v", p)
	}
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-001", time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), &p)
	if err := m.Validate(); err != nil {
		t.Fatalf("the plan is not valid AMP: %v", err)
	}
}
