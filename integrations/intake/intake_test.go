package intake

import (
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

func TestPlan(t *testing.T) {
	r := config.IntakeRepo{Name: "acme/widget", Repo: "/srv/widget"}
	for _, tc := range []struct {
		name     string
		is       github.Issue
		risk     amp.Risk
		branch   string
		criteria []string
	}{
		{"Checklist", github.Issue{Number: 42, Title: "Add MemberCount to Dial", Body: "Why.\n\n- [ ] Dial has MemberCount\n* [x] go test passes\n- not an item", Labels: []string{"ampflow"}},
			amp.RiskLow, "ampflow/issue-42-add-membercount-to-dial", []string{"Dial has MemberCount", "go test passes"}},
		{"RiskLabel", github.Issue{Number: 7, Title: "Fix it", Labels: []string{"ampflow", "Risk:High"}},
			amp.RiskHigh, "ampflow/issue-7-fix-it", []string{"Fix it"}},
		{"NoTitle", github.Issue{Number: 9, Title: "  "}, amp.RiskLow, "ampflow/issue-9-issue-9", []string{"Issue 9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.is.URL = "https://github.com/acme/widget/issues/1"
			p := Plan(r, tc.is, "low")
			if p.RiskLevel != tc.risk || p.Branch != tc.branch || strings.Join(p.AcceptanceCriteria, "|") != strings.Join(tc.criteria, "|") ||
				p.Repo != r.Repo || len(p.Subtasks) != 1 || !strings.Contains(p.Description, tc.is.URL) {
				t.Errorf("plan %+v", p)
			}
		})
	}
}

func TestNotices(t *testing.T) {
	st := task.State{TaskID: "T-2026-042", Status: task.StatusAwaitingApproval, Branch: "ampflow/issue-1-x", Risk: amp.RiskMedium,
		Pending: &decision.Decision{ID: "T-2026-042-d1", Prompt: "Approve the plan?"}}
	keys := func(ns []notice) string {
		var k []string
		for _, n := range ns {
			k = append(k, n.Key)
		}
		return strings.Join(k, ",")
	}
	ns := Notices(st, "http://127.0.0.1:7480/tasks/T-2026-042")
	if keys(ns) != "started,decision:T-2026-042-d1" || !strings.Contains(ns[1].Text, "Decide on the dashboard: http://127.0.0.1:7480/tasks/T-2026-042") {
		t.Errorf("waiting: %+v", ns)
	}
	st.Pending, st.Status, st.PullRequest, st.MergeCommit = nil, task.StatusDone, "https://github.com/acme/widget/pull/3", "abc123"
	if got := keys(Notices(st, "")); got != "started,pull_request,merged,ended" {
		t.Errorf("done: %s", got)
	}
	// Every key is found again by the marker, so nothing is said twice.
	for _, n := range Notices(task.State{TaskID: "T-2026-042", Pending: &decision.Decision{ID: "T-2026-042-d1"}}, "") {
		m := markerRE.FindStringSubmatch("text\n\n" + marker("T-2026-042", n.Key))
		if m == nil || m[1] != "T-2026-042" || m[2] != n.Key {
			t.Errorf("marker of %q read as %v", n.Key, m)
		}
	}
}

func TestExternalID(t *testing.T) {
	id := externalID("Acme/Widget", 42)
	owner, name, n, err := parseExternalID(id)
	if id != "acme/widget#42" || err != nil || owner != "acme" || name != "widget" || n != 42 {
		t.Errorf("%q → %q %q %d %v", id, owner, name, n, err)
	}
	for _, bad := range []string{"acme/widget", "acme#1", "acme/widget#x", "acme/widget#0"} {
		if _, _, _, err := parseExternalID(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
