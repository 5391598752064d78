package dashboard

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

func TestSignIn(t *testing.T) {
	f := newFixture(t, testTokens)
	seedTask(t, f.db, "T-2026-001", 0)
	c := f.client(t)

	t.Run("RedirectsToSignIn", func(t *testing.T) {
		resp, _ := c.do("GET", "/tasks", nil, nil)
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin?next=") {
			t.Fatalf("GET /tasks signed out: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("WrongToken", func(t *testing.T) {
		if resp := c.signIn("nope"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("sign-in with an unknown token: %d", resp.StatusCode)
		}
	})
	t.Run("CookieFlags", func(t *testing.T) {
		resp := c.signIn("tok-ana")
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-in: %d", resp.StatusCode)
		}
		var session *http.Cookie
		for _, ck := range resp.Cookies() {
			if ck.Name == sessionCookie {
				session = ck
			}
		}
		if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Secure {
			t.Fatalf("session cookie over plain HTTP: %+v; want HttpOnly, SameSite=Strict, not Secure", session)
		}
		if strings.Contains(session.Value, "tok-ana") {
			t.Fatal("the session cookie holds the token")
		}
		resp, page := c.do("GET", "/", nil, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, "ana") {
			t.Fatalf("decisions page after sign-in: %d", resp.StatusCode)
		}
	})
	t.Run("SecureBehindTLS", func(t *testing.T) {
		c2 := f.client(t)
		_, page := c2.do("GET", "/signin", nil, nil)
		h := browserHeaders(f)
		h.Set("X-Forwarded-Proto", "https")
		resp, _ := c2.do("POST", "/signin", url.Values{"token": {"tok-ana"}, "csrf": {formValue(page, "csrf")}}, h)
		for _, ck := range resp.Cookies() {
			if ck.Name == sessionCookie && !ck.Secure {
				t.Fatal("session cookie behind TLS is not Secure")
			}
		}
	})
	t.Run("SignOut", func(t *testing.T) {
		_, page := c.do("GET", "/", nil, nil)
		resp, _ := c.do("POST", "/signout", url.Values{"csrf": {formValue(page, "csrf")}}, browserHeaders(f))
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-out: %d", resp.StatusCode)
		}
		if resp, _ := c.do("GET", "/", nil, nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("after sign-out GET / answers %d, want a redirect to sign-in", resp.StatusCode)
		}
	})
	t.Run("NextStaysOnSite", func(t *testing.T) {
		for _, next := range []string{"/\t/evil.example/x", "/.//evil.example", "/tasks\\x"} {
			c4 := f.client(t)
			_, page := c4.do("GET", "/signin?next="+url.QueryEscape(next), nil, nil)
			if got := formValue(page, "next"); got != "/" {
				t.Errorf("sign-in page for next=%q carries next=%q, want /", next, got)
			}
			resp, _ := c4.do("POST", "/signin", url.Values{"token": {"tok-ana"}, "csrf": {formValue(page, "csrf")}, "next": {next}}, browserHeaders(f))
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/" {
				t.Errorf("sign-in with next=%q: %d to %q, want 303 to /", next, resp.StatusCode, loc)
			}
		}
	})
	t.Run("ForgedSignIn", func(t *testing.T) {
		c3 := f.client(t)
		resp, _ := c3.do("POST", "/signin", url.Values{"token": {"tok-ana"}, "csrf": {"guess"}}, browserHeaders(f))
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("sign-in without the form's token: %d", resp.StatusCode)
		}
	})
}

func TestForgedPostRefused(t *testing.T) {
	f := newFixture(t, testTokens)
	d := seedTask(t, f.db, "T-2026-002", 0)
	admin := f.client(t)
	admin.signIn("tok-ana")
	_, page := admin.do("GET", "/", nil, nil)
	csrf := formValue(page, "csrf")
	form := func(token string) url.Values {
		return url.Values{"csrf": {token}, "option": {"approve"}, "digest": {d.Digest}, "back": {"/"}}
	}
	cases := []struct {
		name   string
		form   url.Values
		header http.Header
	}{
		{"NoCSRF", form(""), browserHeaders(f)},
		{"WrongCSRF", form("x" + csrf), browserHeaders(f)},
		{"CrossSiteOrigin", form(csrf), http.Header{"Origin": {"https://evil.example"}}},
		{"CrossSiteFetch", form(csrf), http.Header{"Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"navigate"}}},
		{"SameSiteFetch", form(csrf), http.Header{"Sec-Fetch-Site": {"same-site"}}},
		{"NullOrigin", form(csrf), http.Header{"Origin": {"null"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := admin.do("POST", "/decisions/"+d.ID, tc.form, tc.header)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, body)
			}
		})
	}
	t.Run("NotAForm", func(t *testing.T) {
		h := browserHeaders(f)
		h.Set("Content-Type", "text/plain")
		resp, _ := admin.do("POST", "/decisions/"+d.ID, form(csrf), h)
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("text/plain post: %d", resp.StatusCode)
		}
	})
	t.Run("OtherSessionsToken", func(t *testing.T) {
		other := f.client(t)
		other.signIn("tok-ana")
		resp, _ := other.do("POST", "/decisions/"+d.ID, form(csrf), browserHeaders(f))
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("another session's CSRF token: %d", resp.StatusCode)
		}
	})
	t.Run("NonAdmin", func(t *testing.T) {
		ex := f.client(t)
		ex.signIn("tok-exec")
		_, page := ex.do("GET", "/", nil, nil)
		resp, _ := ex.do("POST", "/decisions/"+d.ID, form(formValue(page, "csrf")), browserHeaders(f))
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("executor's decision: %d", resp.StatusCode)
		}
	})
	if n := f.engine.calls(); n != 0 {
		t.Fatalf("%d forged requests reached the workflows", n)
	}
}

func TestNonAdminSeesNoButtons(t *testing.T) {
	f := newFixture(t, testTokens)
	d := seedTask(t, f.db, "T-2026-003", 0)
	ex := f.client(t)
	ex.signIn("tok-exec")
	for _, path := range []string{"/", "/tasks/T-2026-003"} {
		resp, page := ex.do("GET", path, nil, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, `data-decision-id="`+d.ID+`"`) {
			t.Fatalf("GET %s as executor: %d, decision shown: %v", path, resp.StatusCode, strings.Contains(page, d.ID))
		}
		if strings.Contains(page, `name="option"`) || strings.Contains(page, "/cancel") || strings.Contains(page, "/replan") {
			t.Errorf("GET %s as executor shows an admin control", path)
		}
	}
	adm := f.client(t)
	adm.signIn("tok-ana")
	_, page := adm.do("GET", "/", nil, nil)
	for _, o := range d.Options {
		if !strings.Contains(page, `value="`+o.ID+`"`) || !strings.Contains(page, ">"+o.Label+"</button>") {
			t.Errorf("admin's decisions page has no %q button", o.Label)
		}
	}
}

func TestDecideSendsShownDigest(t *testing.T) {
	f := newFixture(t, testTokens)
	d := seedTask(t, f.db, "T-2026-004", 0)
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/", nil, nil)
	shown := formValue(page[strings.Index(page, `data-decision-id="`+d.ID):], "digest")

	t.Run("NoteRequired", func(t *testing.T) {
		c.do("POST", "/decisions/"+d.ID, url.Values{"csrf": {formValue(page, "csrf")}, "option": {"reject"}, "digest": {shown}, "back": {"/"}}, browserHeaders(f))
		if f.engine.calls() != 0 {
			t.Fatal("a reject without its required note reached the workflow")
		}
	})
	t.Run("Approve", func(t *testing.T) {
		resp, _ := c.do("POST", "/decisions/"+d.ID, url.Values{"csrf": {formValue(page, "csrf")}, "option": {"approve"}, "digest": {shown}, "back": {"/"}}, browserHeaders(f))
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("decide: %d", resp.StatusCode)
		}
		want := decision.Answer{DecisionID: d.ID, Option: "approve", Digest: d.Digest, By: "ana", Channel: "dashboard"}
		if len(f.engine.answers) != 1 || f.engine.answers[0] != want {
			t.Fatalf("answers %+v, want %+v", f.engine.answers, want)
		}
		_, next := c.do("GET", "/", nil, nil)
		if !strings.Contains(next, "Decided "+d.ID+": Approve") {
			t.Errorf("no flash after deciding:\n%s", next)
		}
	})
	t.Run("Late", func(t *testing.T) {
		c.do("POST", "/decisions/"+d.ID, url.Values{"csrf": {formValue(page, "csrf")}, "option": {"approve"}, "digest": {shown}, "back": {"/"}}, browserHeaders(f))
		_, next := c.do("GET", "/", nil, nil)
		if !strings.Contains(next, "already decided by ana on dashboard") {
			t.Errorf("a late answer does not name who decided:\n%s", next)
		}
	})
}

func TestOpenMode(t *testing.T) {
	f := newFixture(t, nil)
	d := seedTask(t, f.db, "T-2026-005", 0)
	c := f.client(t)
	resp, page := c.do("GET", "/", nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, ">Approve</button>") {
		t.Fatalf("open mode: %d, buttons: %v", resp.StatusCode, strings.Contains(page, "Approve"))
	}
	resp, _ = c.do("POST", "/decisions/"+d.ID, url.Values{"option": {"approve"}, "digest": {d.Digest}}, browserHeaders(f))
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("open mode without the CSRF token: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", f.http.URL+"/", nil)
	req.Host = "ampflow.example:8080"
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("open mode under a non-loopback Host: %d", r2.StatusCode)
	}
}

func TestTaskPage(t *testing.T) {
	f := newFixture(t, testTokens)
	d := seedTask(t, f.db, "T-2026-006", 3)
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/tasks/T-2026-006", nil, nil)
	for _, want := range []string{"GET /healthz answers 200", "Write the handler", `data-record-id="T-2026-006-m1"`,
		`data-record-id="` + d.ID + `"`, `data-record-id="T-2026-006-h2"`, "Verified", "/tasks/T-2026-006/cancel", "1/2",
		"codex (executor, working) since",
		`<dd id="task-cost">$0.0123 · 1200 in / 300 out tokens · executor $0.0123 of $5.00</dd>`} {
		if !strings.Contains(page, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
	resp, body := c.do("GET", "/records/"+d.ID, nil, http.Header{"X-Dashboard-Fragment": {"1"}, "Sec-Fetch-Site": {"same-origin"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, d.Prompt) || strings.Contains(body, "<html") {
		t.Fatalf("record body fragment: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := c.do("GET", "/records/"+d.ID, nil, http.Header{"Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"cors"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site fetch of a record: %d", resp.StatusCode)
	}
	_, list := c.do("GET", "/tasks?q=health&status=awaiting_approval", nil, nil)
	if !strings.Contains(list, `data-task-id="T-2026-006"`) || !strings.Contains(list, "0 / 3") {
		t.Errorf("tasks page filtered by text and status lacks the task")
	}
	_, none := c.do("GET", "/tasks?q=nothing-like-it", nil, nil)
	if strings.Contains(none, `data-task-id=`) {
		t.Errorf("a text filter that matches nothing lists tasks")
	}
	for _, p := range []string{"/gates", "/leases", "/agents", "/mesh", "/goals"} {
		resp, body := c.do("GET", p, nil, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `class="empty"`) {
			t.Errorf("GET %s: %d, no empty state", p, resp.StatusCode)
		}
	}
}

func TestWatchPublishes(t *testing.T) {
	f := newFixture(t, testTokens)
	d := seedTask(t, f.db, "T-2026-007", 0)
	ctx := context.Background()
	watching(t, f.srv)
	sub, _, _ := f.srv.hub.subscribe("")
	defer f.srv.hub.unsubscribe(sub)
	start := time.Now()
	if _, err := f.engine.Decide(ctx, d.Subject, decision.Answer{DecisionID: d.ID, Option: "approve", Digest: d.Digest, By: "bob", Channel: "slack"}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	deadline := time.After(time.Second)
	for len(seen) < 3 {
		select {
		case e := <-sub.ch:
			seen[e.Type] = string(e.Data)
		case <-deadline:
			t.Fatalf("after 1s the watcher published %v", seen)
		}
	}
	t.Logf("events within %v", time.Since(start))
	if c := seen[EventDecisionClosed]; !strings.Contains(c, `"by":"bob"`) || !strings.Contains(c, `"channel":"slack"`) || !strings.Contains(c, `"label":"Approve"`) {
		t.Errorf("decision-closed %s does not say who and where", c)
	}
	if s := seen[EventTask]; !strings.Contains(s, `"status":"dispatched"`) {
		t.Errorf("task event %s", s)
	}
}

func TestHubCatchUp(t *testing.T) {
	h := newHub(4)
	for i := range 3 {
		h.publish(EventTask, map[string]int{"n": i})
	}
	first := h.lastID()
	h.publish(EventTask, map[string]int{"n": 3})
	h.publish(EventTask, map[string]int{"n": 4})
	_, backlog, reset := h.subscribe(first)
	if reset || len(backlog) != 2 || string(backlog[1].Data) != `{"n":4}` || backlog[1].ID != h.lastID() {
		t.Fatalf("catch-up from %s: reset %v, %d events", first, reset, len(backlog))
	}
	h.publish(EventTask, map[string]int{"n": 5})
	if _, _, reset := h.subscribe(h.epoch + "-1"); !reset {
		t.Error("an id older than the ring does not reset")
	}
	if _, _, reset := h.subscribe("other-3"); !reset {
		t.Error("another process's id does not reset")
	}
	if _, b, reset := h.subscribe(h.lastID()); reset || len(b) != 0 {
		t.Error("the newest id gets a backlog")
	}
	slow, _, _ := h.subscribe("")
	for i := range subBuffer + 1 {
		h.publish(EventRecord, i)
	}
	if _, ok := <-drain(slow.ch); ok {
		t.Error("a subscriber that fell behind is still subscribed")
	}
}

// drain empties ch and returns it once closed (or still open).
func drain(ch chan Event) chan Event {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return ch
			}
		default:
			return ch
		}
	}
}

// TestSignInThrottled: after MaxFailedSignIns wrong tokens from one
// address, even the right one is refused for the window, with
// Retry-After.
func TestSignInThrottled(t *testing.T) {
	f := newFixture(t, testTokens)
	c := f.client(t)
	for i := range MaxFailedSignIns {
		if resp := c.signIn("guess-" + string(rune('a'+i))); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i+1, resp.StatusCode)
		}
	}
	resp := c.signIn("tok-ana")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("sign-in after %d failures: %d, Retry-After %q; want 429 with Retry-After", MaxFailedSignIns, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestWarnings: the worker's warnings (a runner role without its
// sandbox) are on every page, as an alert.
func TestWarnings(t *testing.T) {
	db := openStore(t)
	const warn = "agents.executor.sandbox is off: the executor's runs are not confined"
	srv := New(Options{Store: db, Actions: &fakeEngine{t: t, db: db}, OpenName: "dev", MaxRejects: 3, Warnings: []string{warn}})
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)
	seedTask(t, db, "T-2026-006", 0)
	for _, path := range []string{"/", "/tasks", "/tasks/T-2026-006"} {
		resp, err := http.Get(h.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `<div class="flash warning" role="alert">`+html.EscapeString(warn)+`</div>`) {
			t.Errorf("%s: %d, the warning is not on the page", path, resp.StatusCode)
		}
	}
	f := newFixture(t, nil)
	if _, page := f.client(t).do("GET", "/", nil, nil); strings.Contains(page, `role="alert"`) {
		t.Error("a worker with no warnings shows one")
	}
}

// TestRecoveringTask: a task whose executor's run died shows recovering,
// the run it recovers and the turn, on its page, and is listed under the
// recovering status.
func TestRecoveringTask(t *testing.T) {
	f := newFixture(t, testTokens)
	st := taskState(t, "T-2026-007", 1, task.StatusRecovering, nil, func(v *task.State) {
		v.UnderlyingStatus = task.StatusInProgress
		v.Recovering = &task.Recovery{Role: amp.RoleExecutor, MsgID: "task_dispatch-T-2026-007-1", Session: "S-1", Since: t0}
	})
	e := []ssot.Entry{{ID: "T-2026-007-m1", Kind: "event", RecordedAt: t0, Body: mustJSON(t, map[string]any{"type": "heartbeat", "note": "the worker died"})}}
	if _, err := f.db.Save(context.Background(), "T-2026-007", e, &st); err != nil {
		t.Fatal(err)
	}
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/tasks/T-2026-007", nil, nil)
	want := `id="task-recovering">the executor's run on task_dispatch-T-2026-007-1 died and is delivered again (in_progress)</span>`
	if !strings.Contains(page, `id="task-status">recovering</span>`) || !strings.Contains(page, want) {
		t.Errorf("task page lacks recovering and %q", want)
	}
	_, list := c.do("GET", "/tasks?status=recovering", nil, nil)
	if !strings.Contains(list, `data-task-id="T-2026-007"`) || !strings.Contains(list, "the executor's run died; delivering again") {
		t.Errorf("the tasks page filtered by recovering lacks the task or its run")
	}
}
