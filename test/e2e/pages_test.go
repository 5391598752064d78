package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/httpapi"
)

// TestListingPages pages GET /v1/tasks of a real `ampflow dev` two at a
// time, and `ampflow task list --all --limit 2` follows the pages to the
// end.
func TestListingPages(t *testing.T) {
	p := startDev(t, t.TempDir(), "AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin")
	api := newAPIClient(t, p.api, "")
	repo := gitRepo(t)
	var ids []string
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("T-2026-%03d", 800+i)
		plan := lowRiskPlan(repo)
		plan.Branch = fmt.Sprintf("feature/page-%d", i)
		api.startTask(id, plan)
		ids = append([]string{id}, ids...) // newest first
	}
	// Visibility catches up with the starts in its own time.
	eventually(t, 30*time.Second, "the 5 tasks in GET /v1/tasks", func() (bool, error) {
		var out httpapi.ListResponse
		if code, resp := api.call("GET", "/v1/tasks", nil, &out); code != http.StatusOK {
			return false, fmt.Errorf("GET /v1/tasks: %d %s", code, resp)
		}
		return len(out.Tasks) == 5, fmt.Errorf("%d tasks listed", len(out.Tasks))
	})

	var got []string
	cursor := ""
	for page := 1; page <= 3; page++ {
		q := url.Values{"limit": {"2"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var out httpapi.ListResponse
		if code, resp := api.call("GET", "/v1/tasks?"+q.Encode(), nil, &out); code != http.StatusOK {
			t.Fatalf("page %d: %d %s", page, code, resp)
		}
		for _, s := range out.Tasks {
			got = append(got, s.TaskID)
		}
		if (page < 3) != (out.NextCursor != "") {
			t.Fatalf("page %d of 3 has next_cursor %q", page, out.NextCursor)
		}
		cursor = out.NextCursor
	}
	if !slices.Equal(got, ids) {
		t.Errorf("3 pages of 2 gave %v, want %v", got, ids)
	}

	out, errOut, code := bareCLI(t, p, "", "task", "list", "--all", "--limit", "2")
	if code != 0 || errOut != "" {
		t.Fatalf("task list --all --limit 2: exit %d, stderr %q", code, errOut)
	}
	var listed []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		listed = append(listed, strings.Fields(l)[0])
	}
	if !slices.Equal(listed, ids) {
		t.Errorf("task list --all --limit 2 listed %v, want %v:\n%s", listed, ids, out)
	}
}
