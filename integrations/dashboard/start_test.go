package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
)

// TestStart: the dashboard's start form starts the task a one-line start
// does and lands on its page; a refused form names the field at fault
// and starts nothing.
func TestStart(t *testing.T) {
	f := newFixture(t, testTokens)
	admin := f.client(t)
	admin.signIn("tok-ana")
	_, page := admin.do("GET", "/tasks/new", nil, nil)
	csrf := formValue(page, "csrf")
	if csrf == "" || !strings.Contains(page, `<label for="start-repo">Repository</label>`) {
		t.Fatalf("no start form:\n%s", page)
	}
	post := func(form url.Values) (*http.Response, string) {
		form.Set("csrf", csrf)
		return admin.do("POST", "/tasks", form, browserHeaders(f))
	}

	t.Run("Started", func(t *testing.T) {
		resp, _ := post(url.Values{"text": {"Add MemberCount to Dial"}, "repo": {"file:///srv/git/dial.git"},
			"criteria": {"Dial has MemberCount\n\n  go test passes  \n"}, "risk": {"medium"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/tasks/T-"+yearOf(t)+"-001" {
			t.Fatalf("POST /tasks: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		in := f.engine.starts[0]
		p := in.Plan
		if p.Repo != "file:///srv/git/dial.git" || p.Branch != "ampflow/add-membercount-to-dial" || p.RiskLevel != amp.RiskMedium ||
			strings.Join(p.AcceptanceCriteria, "|") != "Dial has MemberCount|go test passes" || len(p.Subtasks) != 1 {
			t.Errorf("plan = %+v", p)
		}
		if !in.CreateBranch || in.Coordinator != "ana" {
			t.Errorf("start = %+v, want its branch made, by ana", in)
		}
	})

	for name, tc := range map[string]struct {
		form  url.Values
		field string
		says  string
	}{
		"NoText":           {url.Values{"text": {" "}, "repo": {"/srv/git/dial"}}, "text", "is empty"},
		"NoRepo":           {url.Values{"text": {"Add it"}}, "repo", "is required"},
		"RelativeRepo":     {url.Values{"text": {"Add it"}, "repo": {"src/dial"}}, "repo", "plan.repo must be an absolute path or a repository URL"},
		"SchemeNotFetched": {url.Values{"text": {"Add it"}, "repo": {"ftp://host/dial.git"}}, "repo", "plan.repo must be"},
		"ProtectedBranch":  {url.Values{"text": {"Add it"}, "repo": {"/srv/git/dial"}, "branch": {"main"}}, "branch", "plan.branch must not be main"},
		"Risk":             {url.Values{"text": {"Add it"}, "repo": {"/srv/git/dial"}, "risk": {"huge"}}, "risk", "must be low, medium or high"},
	} {
		t.Run(name, func(t *testing.T) {
			before := len(f.engine.starts)
			resp, page := post(tc.form)
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("POST /tasks: %d, want 422", resp.StatusCode)
			}
			if !strings.Contains(page, `id="`+tc.field+`-error" role="alert">`) || !strings.Contains(page, tc.says) {
				t.Errorf("no %q on the %s field:\n%s", tc.says, tc.field, page)
			}
			if v := tc.form.Get("text"); strings.TrimSpace(v) != "" && !strings.Contains(page, `value="`+v+`"`) {
				t.Errorf("the form lost its text %q", v)
			}
			if len(f.engine.starts) != before {
				t.Errorf("started %+v", f.engine.starts[before:])
			}
		})
	}

	t.Run("NotAdmin", func(t *testing.T) {
		exec := f.client(t)
		exec.signIn("tok-exec")
		_, page := exec.do("GET", "/tasks", nil, nil)
		if strings.Contains(page, "/tasks/new") {
			t.Error("a non-admin is offered the start form")
		}
		resp, _ := exec.do("POST", "/tasks", url.Values{"csrf": {formValue(page, "csrf")}, "text": {"x"}, "repo": {"/r"}}, browserHeaders(f))
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a non-admin's start: %d, want 403", resp.StatusCode)
		}
	})
}

// yearOf is the year the fixture's server starts tasks in: its clock is
// the real one.
func yearOf(t *testing.T) string {
	t.Helper()
	return time.Now().Format("2006")
}
