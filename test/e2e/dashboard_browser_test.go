package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/repomesh"
)

// TestDashboardBrowser drives the dashboard of a real `ampflow dev` in
// Debian's Chromium as a person would: sign in with a token, see the
// pending plan approvals, approve one and watch the task's status change
// on another tab without a reload, see a decision taken on the CLI leave
// with who took it, find every record of the task on its timeline, and
// open a record's body, git's diff of a result and a record's own page,
// see the leases, agents and mesh conversation of two agents and release
// a lease.
// A non-admin token sees no buttons; a form posted from another site, and
// one posted from the dashboard's own origin without the session's CSRF
// token, are refused. Each page is photographed at desktop and phone
// widths.
func TestDashboardBrowser(t *testing.T) {
	chromiumPath(t)
	p := startDev(t, t.TempDir(),
		"AMPFLOW_AUTH_TOKENS=tok-ana-0123456789ab:admin:ana,tok-bob-0123456789ab:admin:bob,tok-exec-0123456789ab:executor:codex,tok-plan-0123456789ab:coordinator:planner",
		"AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin")
	if !strings.Contains(p.output(), "dashboard") || !strings.Contains(p.output(), "http://"+p.api+"/") {
		t.Errorf("ampflow dev does not print the dashboard's URL:\n%s", p.output())
	}
	base := "http://" + p.api
	tasks := dial(t, p)
	repo := gitRepo(t)
	plan, _ := json.Marshal(lowRiskPlan(repo))
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(plan))
	start := func() (string, decision.Decision) {
		stdout, stderr, code := cliAs(t, p, "tok-plan-0123456789ab", nil, "task", "start", "-f", planFile)
		if code != 0 {
			t.Fatalf("task start: exit %d\n%s%s", code, stdout, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		id := lines[len(lines)-1]
		var st task.State
		eventually(t, 30*time.Second, "the plan approval of "+id, func() (bool, error) {
			var err error
			st, err = tasks.State(t.Context(), id)
			return err == nil && st.Pending != nil, err
		})
		return id, *st.Pending
	}
	approved, d1 := start()
	elsewhere, d2 := start()
	open, d3 := start()
	shots := screenshotDir(t)
	b := newBrowser(t)

	// Sign in as ana, an admin.
	ana := b.session()
	ana.open(base + "/tasks")
	ana.until("the sign-in page", 10*time.Second, `location.pathname === "/signin" && document.querySelector("#token")`)
	ana.checkLabels("sign-in")
	ana.shoot(shots, "signin")
	ana.do("signing in", chromedp.SendKeys("#token", "tok-ana-0123456789ab"), chromedp.Click(`form[action="/signin"] button[type=submit]`))
	ana.until("the tasks page after sign-in", 10*time.Second, `location.pathname === "/tasks" && document.querySelector(".who .user")`)
	cookie := evalIn[string](ana, "document.cookie")
	if strings.Contains(cookie, "ampflow_session") {
		t.Errorf("the session cookie is readable from JavaScript: %q", cookie)
	}

	// The decisions page lists each plan approval with a button per option.
	ana.open(base + "/")
	card := func(d decision.Decision) string { return `document.querySelector('[data-decision-id="` + d.ID + `"]')` }
	ana.until("the plan approvals on the decisions page", 10*time.Second, card(d1)+" && "+card(d2)+" && "+card(d3))
	for _, d := range []decision.Decision{d1, d2, d3} {
		got := evalIn[string](ana, `Array.from(`+card(d)+`.querySelectorAll("button")).map(b => b.textContent.trim()).join("|")`)
		var want []string
		for _, o := range d.Options {
			want = append(want, o.Label)
		}
		if got != strings.Join(want, "|") {
			t.Errorf("decision %s has buttons %q, want the options' labels %q", d.ID, got, strings.Join(want, "|"))
		}
		if shown := evalIn[string](ana, card(d)+`.querySelector("input[name=digest]").value`); shown != d.Digest {
			t.Errorf("decision %s carries digest %q, want %q", d.ID, shown, d.Digest)
		}
		text := evalIn[string](ana, card(d)+".innerText")
		for _, want := range []string{d.Prompt, "0 of 1 approvals", d.Digest[:12]} {
			if !strings.Contains(text, want) {
				t.Errorf("decision %s does not show %q:\n%s", d.ID, want, text)
			}
		}
	}
	ana.checkLabels("decisions")
	ana.shoot(shots, "decisions")

	// A second tab watches the tasks page while ana approves on the first.
	watcher := ana.another()
	watcher.open(base + "/tasks")
	row := `document.querySelector('tr[data-task-id="` + approved + `"] .status')`
	watcher.until("the task awaiting approval on the tasks page", 10*time.Second, row+` && `+row+`.textContent === "awaiting_approval"`)
	evalIn[bool](watcher, "window.__sameDocument = true")
	watcher.until("the live stream", 10*time.Second, `document.getElementById("live").dataset.state === "live"`)
	// From the keyboard alone: the skip link first, then Tab to Approve.
	ana.open(base + "/")
	ana.until("the decisions page", 10*time.Second, card(d1))
	if n := ana.tabTo("a.skip", 1); n != 1 {
		t.Errorf("the skip link is reached after %d presses of Tab, want 1", n)
	}
	presses := ana.tabTo(`[data-decision-id="`+d1.ID+`"] button[value="approve"]`, 60)
	t.Logf("Approve of %s is %d presses of Tab from the top of the page", d1.ID, presses)
	ana.do("approving "+d1.ID+" with Enter", chromedp.KeyEvent(kb.Enter))
	ana.until("the flash after approving", 15*time.Second, `document.getElementById("flash") && document.getElementById("flash").textContent.includes("Decided `+d1.ID+`")`)
	took := watcher.until("the task's status changing on the tasks page", 20*time.Second, row+` && `+row+`.textContent !== "awaiting_approval"`)
	t.Logf("the tasks page showed %s as %s %v after the approval answered", approved, evalIn[string](watcher, row+".textContent"), took)
	if !evalIn[bool](watcher, "window.__sameDocument === true") {
		t.Error("the tasks page was reloaded to show the change")
	}
	watcher.checkLabels("tasks")
	watcher.shoot(shots, "tasks")

	// The executor delivers, so the task has a result, a kept diff and a
	// review request to show.
	executor := &agent{t: t, tasks: tasks, repo: repo}
	dispatch := executor.next(amp.RoleExecutor, approved, amp.TypeTaskDispatch)
	executor.ack(dispatch)
	result := executor.work(dispatch, "hello.txt", "hello\n")
	executor.send(result)
	executor.next(amp.RoleReviewer, approved, amp.TypeReviewRequest)

	// A decision taken on the CLI leaves the decisions page, saying who.
	ana.open(base + "/")
	ana.until("the other decisions", 10*time.Second, card(d2)+" && "+card(d3)+` && document.getElementById("live").dataset.state === "live"`)
	evalIn[bool](ana, "window.__sameDocument = true")
	if _, stderr, code := cliAs(t, p, "tok-bob-0123456789ab", nil, "decide", elsewhere, "--option", "approve"); code != 0 {
		t.Fatalf("bob's approval on the CLI: exit %d %s", code, stderr)
	}
	gone := ana.until("the decision taken on the CLI (through the API) leaving with who took it", 10*time.Second,
		`!`+card(d2)+` && document.getElementById("closed").textContent.includes("Decided by bob on api")`)
	t.Logf("the decisions page dropped %s %v after the CLI answered", d2.ID, gone)
	if !evalIn[bool](ana, "window.__sameDocument === true") {
		t.Error("the decisions page was reloaded to drop the decision")
	}

	// The timeline holds every record of the task, each body on demand.
	ana.open(base + "/tasks/" + approved)
	ids := historyIDs(t, p, approved)
	if len(ids) < 3 {
		t.Fatalf("history of %s: %v", approved, ids)
	}
	quoted, _ := json.Marshal(ids)
	ana.until("every record of "+approved+" on its timeline", 15*time.Second,
		string(quoted)+`.every(id => document.querySelector('[data-record-id="' + id + '"]'))`)
	text := evalIn[string](ana, `document.getElementById("content").innerText`)
	for _, want := range []string{"hello.txt says hello", "write hello.txt", "Verified", "Head #"} {
		if !strings.Contains(text, want) {
			t.Errorf("the task page does not show %q", want)
		}
	}
	first := `document.querySelector('details[data-record="` + ids[0] + `"]')`
	ana.do("opening the first record's body", chromedp.Click(`details[data-record="`+ids[0]+`"] > summary`))
	ana.until("the first record's body", 10*time.Second, first+`.querySelector("pre") && `+first+`.textContent.includes("Record `+ids[0]+`")`)
	if evalIn[int](ana, `document.querySelectorAll('form[action$="/cancel"]').length`) != 1 {
		t.Error("an admin sees no cancel form on a running task")
	}
	ana.checkLabels("task")
	ana.shoot(shots, "task")

	// git's diff of the result, from the task page's link, and the
	// result's record on a page of its own.
	ana.until("the result's diff summary", 10*time.Second, `document.querySelector('a[href="/tasks/`+approved+`/diffs/`+result.MsgID+`"]')`)
	ana.do("opening git's diff", chromedp.Click(`a[href="/tasks/`+approved+`/diffs/`+result.MsgID+`"]`))
	ana.until("the diff page", 10*time.Second, `location.pathname === "/tasks/`+approved+`/diffs/`+result.MsgID+`" && `+
		`Array.from(document.querySelectorAll("pre.diff .add")).some(l => l.textContent === "+hello") && `+
		`Array.from(document.querySelectorAll("pre.diff .file")).some(l => l.textContent.includes("hello.txt"))`)
	ana.checkLabels("diff")
	ana.shoot(shots, "diff")
	ana.open(base + "/records/" + result.MsgID)
	ana.until("the result's record page", 10*time.Second, `document.querySelector('[data-record-id="`+result.MsgID+`"]') && `+
		`document.querySelector(".record-body pre").textContent.includes(`+jsString(result.Result().CommitHash)+`)`)
	ana.checkLabels("record")
	ana.shoot(shots, "record")
	ana.open(base + "/gates")
	ana.until("the gates page's empty state", 10*time.Second, `document.querySelector("main .empty")`)
	ana.shoot(shots, "gates")

	// Leases, Agents and Mesh: codex and the planner each hold a lease
	// and talk in a thread.
	codexAPI := newAPIClient(t, p.api, "tok-exec-0123456789ab")
	planner := codexAPI.as("tok-plan-0123456789ab")
	var held, docs repomesh.Lease
	if code := codexAPI.do("POST", "/v1/leases", map[string]any{"resource_key": "file:app:main", "ttl_seconds": 600}, &held); code != 201 {
		t.Fatalf("codex's lease: %d", code)
	}
	if code := planner.do("POST", "/v1/leases", map[string]any{"resource_key": "file:docs:main", "ttl_seconds": 600}, &docs); code != 201 {
		t.Fatalf("the planner's lease: %d", code)
	}
	chat := func(c *apiClient, from, to, subject, content, parent string) repomesh.Event {
		payload := map[string]any{"from": from, "from_id": from, "to": to, "subject": subject, "content": content,
			"timestamp": time.Now().UTC().Format(time.RFC3339)}
		if parent != "" {
			payload["parent_message_id"] = parent
		}
		var e repomesh.Event
		if code := c.do("POST", "/v1/events", map[string]any{"type": "agent.chat", "severity": "info", "payload": payload}, &e); code != 201 {
			t.Fatalf("%s's message: %d", from, code)
		}
		return e
	}
	root := chat(codexAPI, "codex", "planner", "Schema", "Who owns the users table?", "")
	chat(planner, "planner", "codex", "Re: Schema", "You do; ask before migrating.", root.ID)

	rowOf := func(key string) string {
		return `Array.from(document.querySelectorAll("table.panel tbody tr")).find(r => r.cells[0].textContent === ` + jsString(key) + `)`
	}
	ana.open(base + "/leases")
	ana.until("both leases on the leases page", 10*time.Second, rowOf("file:app:main")+` && `+rowOf("file:docs:main"))
	if text := evalIn[string](ana, rowOf("file:app:main")+".innerText"); !strings.Contains(text, "codex") || !strings.Contains(text, "in 10 minutes") ||
		!strings.Contains(text, held.LeaseID) {
		t.Errorf("codex's lease row reads %q; want its holder, its lease id and that it expires in 10 minutes", text)
	}
	ana.checkLabels("leases")
	ana.shoot(shots, "leases")
	// A lease taken while the page is open shows up without a reload.
	ana.until("the live stream on the leases page", 10*time.Second, `document.getElementById("live").dataset.state === "live"`)
	evalIn[bool](ana, "window.__sameDocument = true")
	if code := codexAPI.do("POST", "/v1/leases", map[string]any{"resource_key": "file:web:main", "ttl_seconds": 600}, &repomesh.Lease{}); code != 201 {
		t.Fatalf("codex's second lease: %d", code)
	}
	took = ana.until("the new lease on the open leases page", 10*time.Second, rowOf("file:web:main")+` && window.__sameDocument === true`)
	t.Logf("the leases page showed a new lease %v after it was taken", took)
	ana.do("releasing the planner's lease", chromedp.Click(`button[aria-label="Release file:docs:main held by planner"]`))
	ana.until("the release's flash, the lease gone", 15*time.Second, `location.pathname === "/leases" && document.getElementById("flash") && `+
		`document.getElementById("flash").textContent.includes("Released `+docs.LeaseID+`") && !`+rowOf("file:docs:main"))
	var after repomesh.LeaseList
	if code := planner.do("GET", "/v1/leases?agent_id=planner&limit=1", nil, &after); code != 200 || len(after.Leases) != 1 ||
		after.Leases[0].LeaseID != docs.LeaseID || after.Leases[0].State != "released" || after.Leases[0].Reason != "admin" {
		t.Errorf("the lease released on the dashboard: %d %+v; want it released by an admin", code, after.Leases)
	}

	ana.open(base + "/agents")
	ana.until("codex and the planner on the agents page", 10*time.Second, rowOf("codex")+` && `+rowOf("planner"))
	if text := evalIn[string](ana, rowOf("codex")+".innerText"); !strings.Contains(text, "2 lease(s): file:app:main, file:web:main") || !strings.Contains(text, "ago") {
		t.Errorf("codex's row on the agents page reads %q; want its lease and when it last beat", text)
	}
	if text := evalIn[string](ana, rowOf("planner")+".innerText"); !strings.Contains(text, "no lease held") {
		t.Errorf("the planner's row on the agents page reads %q; want no lease after the release", text)
	}
	if evalIn[bool](ana, "!!"+rowOf(approved)) {
		t.Errorf("the agents page lists %s, a task holding its branch's lease, as an agent", approved)
	}
	if evalIn[bool](ana, "!!"+rowOf("ampflow")) {
		t.Error("the agents page lists ampflow, the sender of the system's notices, as an agent")
	}
	ana.checkLabels("agents")
	ana.shoot(shots, "agents")

	ana.open(base + "/mesh")
	ana.until("the thread on the mesh page", 10*time.Second, `(() => { const t = document.querySelector("table.panel tbody").innerText; `+
		`const q = t.indexOf("Who owns the users table?"), a = t.indexOf("You do; ask before migrating."); return q >= 0 && a > q && t.includes("↳ `+root.ID+`"); })()`)
	ana.checkLabels("mesh")
	ana.shoot(shots, "mesh")
	// A reply sent while the page is open joins its thread without a reload.
	ana.until("the live stream on the mesh page", 10*time.Second, `document.getElementById("live").dataset.state === "live"`)
	evalIn[bool](ana, "window.__sameDocument = true")
	chat(codexAPI, "codex", "planner", "Re: Schema", "Thanks, I will ask first.", root.ID)
	took = ana.until("the new reply on the open mesh page", 10*time.Second, `(() => { const t = document.querySelector("table.panel tbody").innerText; `+
		`const a = t.indexOf("You do; ask before migrating."), b = t.indexOf("Thanks, I will ask first."); return a >= 0 && b > a && window.__sameDocument === true; })()`)
	t.Logf("the mesh page showed a new reply %v after it was sent", took)

	// A token of another role reads, without a single button to decide.
	codex := b.session()
	codex.open(base + "/signin")
	codex.do("signing in as codex", chromedp.SendKeys("#token", "tok-exec-0123456789ab"), chromedp.Click(`form[action="/signin"] button[type=submit]`))
	codex.until("the decisions page as codex", 10*time.Second, `location.pathname === "/" && `+card(d3))
	if n := evalIn[int](codex, `document.querySelectorAll("main button, main form[method=post]").length`); n != 0 {
		t.Errorf("codex (executor) sees %d buttons or forms on the decisions page", n)
	}
	codex.open(base + "/tasks/" + open)
	codex.until("the open task as codex", 10*time.Second, card(d3))
	if n := evalIn[int](codex, `document.querySelectorAll("main button, main form[method=post]").length`); n != 0 {
		t.Errorf("codex (executor) sees %d buttons or forms on the task page", n)
	}
	codex.open(base + "/leases")
	codex.until("the leases page as codex", 10*time.Second, rowOf("file:app:main"))
	if n := evalIn[int](codex, `document.querySelectorAll("main button, main form[method=post]").length`); n != 0 {
		t.Errorf("codex (executor) sees %d buttons or forms on the leases page", n)
	}

	// A script on the dashboard's own origin posts a decision with ana's
	// cookie but without her session's CSRF token: a missing one, a wrong
	// one, and codex's (another session's).
	codexCSRF := evalIn[string](codex, `document.querySelector('form[action="/signout"] input[name=csrf]').value`)
	ana.open(base + "/")
	ana.until("the decisions page", 10*time.Second, card(d3))
	for _, tc := range []struct{ name, csrf string }{{"NoCSRF", ""}, {"WrongCSRF", "guessed"}, {"AnotherSessionsCSRF", codexCSRF}} {
		form := map[string]string{"option": "approve", "digest": d3.Digest, "back": "/"}
		if tc.csrf != "" {
			form["csrf"] = tc.csrf
		}
		got := postFrom(ana, "/decisions/"+d3.ID, form)
		if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "CSRF token is missing or not this session's") {
			t.Errorf("%s: a same-origin post without ana's CSRF token answered %q, want 403 for the CSRF token", tc.name, got)
		}
	}

	// A page on another site posts a decision form in ana's browser.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/link" {
			fmt.Fprintf(w, `<!doctype html><a id="l" href="%s/tasks/%s">the task</a>`, base, approved)
			return
		}
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/decisions/%s">
<input name="option" value="approve"><input name="digest" value="%s"><input name="csrf" value="guessed"></form>
<script>document.getElementById("f").submit()</script>`, base, html.EscapeString(d3.ID), d3.Digest)
	}))
	defer evil.Close()
	ana.open(evil.URL)
	ana.until("the forged post's answer", 10*time.Second, `location.href.startsWith(`+jsString(base)+`) && document.body.innerText.includes("cross-site request refused")`)
	// A link in a chat message (another site) opens the task signed in,
	// although the SameSite=Strict cookie is not sent with the first request.
	ana.open(evil.URL + "/link")
	ana.do("following a link from another site", chromedp.Click("#l"))
	ana.until("the task page from another site's link", 10*time.Second,
		`location.pathname === "/tasks/`+approved+`" && document.querySelector(".who .user") && document.querySelector(".timeline")`)

	time.Sleep(time.Second)
	if st, err := tasks.State(t.Context(), open); err != nil || st.Pending == nil || st.Pending.ID != d3.ID {
		t.Fatalf("after the forged posts %s: %v, pending %+v; want %s still open", open, err, st.Pending, d3.ID)
	}
	ana.open(base + "/")
	ana.until("the decision the forged posts left open", 10*time.Second, card(d3)+` && `+card(d3)+`.innerText.includes("0 of 1 approvals")`)
}

// postFrom sends a form from the tab's page with fetch, as a script of
// that page's origin would, with the browser's cookies; it answers the
// status and the body ("403 ...": a redirect reads "0 ").
func postFrom(tb *tab, path string, form map[string]string) string {
	tb.t.Helper()
	body, _ := json.Marshal(form)
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(`+jsString(path)+`, {method: "POST", redirect: "manual", `+
		`headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: new URLSearchParams(`+string(body)+`).toString()})`+
		`.then(async r => r.status + " " + (await r.text()))`, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("posting to %s from the page: %v", path, err)
	}
	return got
}

// TestDashboardOpenMode opens the dashboard of `ampflow dev` with no
// tokens: the local user is signed in as an admin without a sign-in page.
func TestDashboardOpenMode(t *testing.T) {
	chromiumPath(t)
	p := startDev(t, t.TempDir(), "AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin")
	tasks := dial(t, p)
	plan, _ := json.Marshal(lowRiskPlan(gitRepo(t)))
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(plan))
	stdout, stderr, code := cliAs(t, p, "", nil, "task", "start", "-f", planFile)
	if code != 0 {
		t.Fatalf("task start: exit %d\n%s%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	id := lines[len(lines)-1]
	eventually(t, 30*time.Second, "the plan approval of "+id, func() (bool, error) {
		st, err := tasks.State(t.Context(), id)
		return err == nil && st.Pending != nil, err
	})
	local := newBrowser(t).session()
	local.open("http://" + p.api + "/")
	local.until("the decisions page, signed in", 10*time.Second,
		`location.pathname === "/" && document.querySelector(".who .role").textContent === "admin" && document.querySelector('button[value="approve"]')`)
	local.do("approving", chromedp.Click(`button[value="approve"]`))
	local.until("the flash", 15*time.Second, `document.getElementById("flash") && document.getElementById("flash").textContent.includes("Decided")`)
	waitStatus(t, tasks, id, task.StatusDispatched)

	// A task in one line from the form: a relative repository is named
	// beside its field, then the start lands on the new task's page.
	local.open("http://" + p.api + "/tasks")
	local.do("opening the start form", chromedp.Click(`a[href="/tasks/new"]`))
	local.until("the start form", 10*time.Second, `document.querySelector("#start-text")`)
	local.do("starting with a relative repository", chromedp.SendKeys("#start-text", "Add a form file"),
		chromedp.SendKeys("#start-repo", "src/app"), chromedp.Click(`form.start button[type=submit]`))
	local.until("the repository's problem by its field", 10*time.Second,
		`document.getElementById("repo-error") && document.getElementById("repo-error").textContent.includes("plan.repo") && document.querySelector("#start-repo").getAttribute("aria-invalid") === "true"`)
	repo := gitRepo(t)
	local.do("starting with an absolute one", chromedp.SetValue("#start-repo", repo), chromedp.Click(`form.start button[type=submit]`))
	local.until("the new task's page", 15*time.Second,
		`/^\/tasks\/T-\d{4}-\d{3,}$/.test(location.pathname) && location.pathname !== "/tasks/`+id+`" && document.querySelector(".lead").textContent === "Add a form file"`)
}
