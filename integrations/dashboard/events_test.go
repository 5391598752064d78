package dashboard

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/activities/ssot/ssottest"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// readEvents reads server-sent events from /events until n have come.
func readEvents(t *testing.T, f *fixture, last string, n int) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.http.URL+"/events", nil)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("GET /events: %d %s", resp.StatusCode, ct)
	}
	var out []Event
	var e Event
	sc := bufio.NewScanner(resp.Body)
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			e.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			e.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			e.Data = []byte(line[6:])
		case line == "" && e.Type != "":
			out = append(out, e)
			e = Event{}
		}
	}
	return out
}

// TestEventsReconnect drops a page's stream and reconnects it with its
// last event id: it gets what it missed, in order; an id from another
// process gets a reset.
func TestEventsReconnect(t *testing.T) {
	f := newFixture(t, nil)
	f.srv.hub.publish(EventTask, taskEvent{TaskID: "T-1", Status: "dispatched"})
	first := readEvents(t, f, "", 1)
	if first[0].Type != "hello" || first[0].ID != f.srv.hub.lastID() {
		t.Fatalf("first event %+v, want hello with the newest id", first[0])
	}
	f.srv.hub.publish(EventRecord, recordEvent{TaskID: "T-1", Seq: 5})
	f.srv.hub.publish(EventDecisionClosed, decisionEvent{ID: "T-1-d1", Subject: "T-1", By: "bob", Channel: "slack"})
	got := readEvents(t, f, first[0].ID, 3)
	if len(got) != 3 || got[1].Type != EventRecord || got[2].Type != EventDecisionClosed || got[2].ID != f.srv.hub.lastID() ||
		!strings.Contains(string(got[2].Data), `"by":"bob"`) {
		t.Fatalf("after reconnecting: %+v", got)
	}
	if reset := readEvents(t, f, "0badf00d-1", 1); reset[0].Type != EventReset {
		t.Fatalf("an unknown id got %+v, want a reset", reset[0])
	}
}

func TestEventsNeedASession(t *testing.T) {
	f := newFixture(t, testTokens)
	resp, err := http.Get(f.http.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /events signed out: %d", resp.StatusCode)
	}
}

func TestAdminActions(t *testing.T) {
	f := newFixture(t, testTokens)
	seedTask(t, f.db, "T-2026-010", 0)
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/tasks/T-2026-010", nil, nil)
	csrf := formValue(page, "csrf")
	if !strings.Contains(page, `&#34;subtask_id&#34;: &#34;s1&#34;`) {
		t.Errorf("the replan form does not start from the remaining subtasks")
	}
	resp, _ := c.do("POST", "/tasks/T-2026-010/cancel", url.Values{"csrf": {csrf}, "reason": {"no longer needed"}}, browserHeaders(f))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/tasks/T-2026-010" {
		t.Fatalf("cancel: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if len(f.engine.cancels) != 1 || f.engine.cancels[0].By != "ana" || f.engine.cancels[0].Reason != "no longer needed" {
		t.Fatalf("cancels %+v", f.engine.cancels)
	}
	resp, _ = c.do("POST", "/tasks/T-2026-010/replan", url.Values{"csrf": {csrf}, "subtasks": {`[{"subtask_id":"s9","description":"x","estimated_lines":3,"extra":1}]`}}, browserHeaders(f))
	_, after := c.do("GET", "/tasks/T-2026-010", nil, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(after, "Not replanned") {
		t.Errorf("a replan with an unknown field was not refused")
	}
}

func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/tasks/T-1", "/tasks/T-1"}, {"/", "/"}, {"", "/"}, {"//evil.example/x", "/"},
		{"/\\evil.example", "/"}, {"https://evil.example", "/"}, {"/a\r\nSet-Cookie: x", "/"},
		// Browsers drop tabs and newlines from a URL before resolving it.
		{"/\t/evil.example/x", "/"}, {"/\n/evil.example", "/"}, {"/\r/evil.example", "/"},
		{"\t//evil.example", "/"}, {"/x\x00y", "/"}, {"/x\x7fy", "/"}, {"/x\x1b", "/"},
		// A backslash anywhere is a slash to a browser.
		{"/tasks\\x", "/"}, {"/.\\/evil.example", "/"},
		// Escapes a later hop may decode, and dot segments.
		{"/%09/evil.example/x", "/"}, {"/%2F/evil.example", "/"}, {"/%5Cevil.example", "/"},
		{"/./\t/evil.example", "/"}, {"/.//evil.example", "/"}, {"/..//evil.example", "/"},
		{"/a/..//evil.example", "/"}, {"/%2e//evil.example", "/"}, {"/a/%2E%2E//evil.example", "/"}, {"/%zz", "/"},
		{"/tasks/T-1?status=open&q=a%20b", "/tasks/T-1?status=open&q=a%20b"}, {"/tasks/T%2D1", "/tasks/T%2D1"},
	} {
		if got := localPath(tc.in, "/"); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// recorder takes every call and answers that the decision is closed.
type recorder struct {
	subjects []string
	answers  []decision.Answer
}

func (r *recorder) Decide(_ context.Context, subject string, in decision.Answer) (task.DecideResult, error) {
	r.subjects, r.answers = append(r.subjects, subject), append(r.answers, in)
	return task.DecideResult{Outcome: decision.Outcome{DecisionID: in.DecisionID, Option: in.Option}}, nil
}

func (r *recorder) Cancel(context.Context, string, task.CancelInput) (task.ChangeResult, error) {
	return task.ChangeResult{}, nil
}

func (r *recorder) StartNext(context.Context, task.Input, int) (string, error) {
	return "", errors.New("the recorder starts nothing")
}

func (r *recorder) Replan(context.Context, string, task.ReplanInput) (task.ChangeResult, error) {
	return task.ChangeResult{}, nil
}

// TestOtherSubjectDecision shows the decision of a workflow that is not a
// task (a gate) and sends its answer to that workflow.
func TestOtherSubjectDecision(t *testing.T) {
	f := newFixture(t, testTokens)
	rec := &recorder{}
	f.srv.actions = rec
	d := decision.Decision{ID: "gate-7-d1", Subject: "gate-7", Kind: "gate_budget", Prompt: "Spend over budget on gate 7?",
		Options: []decision.Option{{ID: "approve", Label: "Allow"}, {ID: "reject", Label: "Refuse"}}, Digest: strings.Repeat("ab", 32),
		RaisedAt: t0, Required: 1, Context: decision.Context{Extra: map[string]any{"cost": "12.50 USD"}}}
	if err := f.db.SaveDecisions(context.Background(), "gate-7", 1, []ssot.PendingDecision{{ID: d.ID, Kind: string(d.Kind), RaisedAt: t0, Body: mustJSON(t, d)}}); err != nil {
		t.Fatal(err)
	}
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/", nil, nil)
	if !strings.Contains(page, `data-subject="gate-7"`) || !strings.Contains(page, ">Allow</button>") || !strings.Contains(page, "12.50 USD") ||
		strings.Contains(page, `href="/tasks/gate-7"`) {
		t.Fatalf("the gate's decision is not shown as it should be:\n%s", page)
	}
	c.do("POST", "/decisions/"+d.ID, url.Values{"csrf": {formValue(page, "csrf")}, "option": {"approve"}, "digest": {d.Digest}}, browserHeaders(f))
	if len(rec.subjects) != 1 || rec.subjects[0] != "gate-7" || rec.answers[0].Channel != Channel || rec.answers[0].Digest != d.Digest {
		t.Fatalf("decide calls: %v %+v", rec.subjects, rec.answers)
	}
}

// TestWatchSeesOtherWriters has one process write and another's watcher
// publish: two stores opened on one database, as two workers share it,
// on each engine.
func TestWatchSeesOtherWriters(t *testing.T) {
	for _, e := range ssottest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			u := e.URL(t)
			open := func() *ssot.DB {
				db, err := ssot.Open(context.Background(), u)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			writer, reader := open(), open()
			s := New(Options{Store: reader, Actions: &recorder{}, Poll: DefaultPoll})
			sub, _, _ := s.hub.subscribe("")
			watching(t, s)
			start := time.Now()
			d := seedTask(t, writer, "T-2026-020", 0)
			for {
				select {
				case ev := <-sub.ch:
					if ev.Type == EventDecisionOpened && strings.Contains(string(ev.Data), d.ID) {
						t.Logf("%s: published %v after the other store's write", e.Name, time.Since(start))
						return
					}
				case <-time.After(time.Second):
					t.Fatalf("%s: no decision-opened within 1s of another store's write", e.Name)
				}
			}
		})
	}
}

// TestLinkFromAnotherSite follows a link from a chat message: the first
// request has no SameSite=Strict cookie, so the page asks again from this
// site, and that request has it.
func TestLinkFromAnotherSite(t *testing.T) {
	f := newFixture(t, testTokens)
	seedTask(t, f.db, "T-2026-030", 0)
	c := f.client(t)
	resp, body := c.do("GET", "/tasks/T-2026-030", nil, http.Header{"Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"navigate"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `http-equiv="refresh" content="0; url=/tasks/T-2026-030"`) {
		t.Fatalf("cross-site link without a cookie: %d\n%s", resp.StatusCode, body)
	}
	resp, _ = c.do("GET", "/tasks/T-2026-030", nil, http.Header{"Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"navigate"}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin") {
		t.Fatalf("the same link from this site, signed out: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = c.do("GET", "/records/T-2026-030-m1", nil, http.Header{"Sec-Fetch-Site": {"none"}, "Sec-Fetch-Mode": {"navigate"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a record's page typed in, signed out: %d, want the sign-in redirect", resp.StatusCode)
	}
}

func TestDiff(t *testing.T) {
	f := newFixture(t, testTokens)
	seedTask(t, f.db, "T-2026-040", 0)
	result := map[string]any{"msg_id": "T-2026-040-r1", "type": "task_result", "from": "executor", "to": "coordinator",
		"payload": map[string]any{"diff_summary": map[string]any{"files_changed": []string{"health.go"}, "lines_added": 12, "lines_removed": 1}}}
	next := taskState(t, "T-2026-040", 2, task.StatusInReview, nil)
	if _, err := f.db.Save(context.Background(), "T-2026-040", []ssot.Entry{{ID: "T-2026-040-r1", Kind: "message", RecordedAt: t0, Body: mustJSON(t, result)}}, &next); err != nil {
		t.Fatal(err)
	}
	if err := f.db.PutFile(context.Background(), "T-2026-040", "diffs/T-2026-040-r1.diff", []byte("diff --git a/health.go b/health.go\n@@ -1 +1,12 @@\n-old <b>\n+new\n")); err != nil {
		t.Fatal(err)
	}
	c := f.client(t)
	c.signIn("tok-exec")
	_, page := c.do("GET", "/tasks/T-2026-040", nil, nil)
	if !strings.Contains(page, "+12") || !strings.Contains(page, "health.go") || !strings.Contains(page, `href="/tasks/T-2026-040/diffs/T-2026-040-r1"`) {
		t.Errorf("the task page lacks the result's diff summary and link")
	}
	_, diff := c.do("GET", "/tasks/T-2026-040/diffs/T-2026-040-r1", nil, nil)
	if !strings.Contains(diff, `<span class="add">&#43;new</span>`) || !strings.Contains(diff, `<span class="del">-old &lt;b&gt;</span>`) {
		t.Errorf("the diff page:\n%s", diff)
	}
	if resp, _ := c.do("GET", "/tasks/T-2026-040/diffs/nope", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a diff not kept: %d", resp.StatusCode)
	}
}

// TestEventsOutliveWriteTimeout keeps a stream open past the server's
// write timeout, as the HTTP API's server sets one: each event extends it.
func TestEventsOutliveWriteTimeout(t *testing.T) {
	db := openStore(t)
	s := New(Options{Store: db, Actions: &recorder{}})
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go func() {
		time.Sleep(600 * time.Millisecond)
		s.hub.publish(EventTask, taskEvent{TaskID: "T-1", Status: "done"})
	}()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: task" {
			return
		}
	}
	t.Fatalf("the stream ended before the event: %v", sc.Err())
}

// TestRefusals shows a task's refused input on its page, live.
func TestRefusals(t *testing.T) {
	f := newFixture(t, testTokens)
	seedTask(t, f.db, "T-2026-050", 0)
	ctx := context.Background()
	sub, _, _ := f.srv.hub.subscribe("")
	watching(t, f.srv)
	raw := `{"type":"task_result","oops":` + strings.Repeat("x", maxRaw) + `}`
	if err := f.db.AppendError(ctx, ssot.ErrorEntry{Source: "api", TaskID: "T-2026-050", Reason: "payload.diff_summary: is required", Raw: raw}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Second)
	for got := false; !got; {
		select {
		case e := <-sub.ch:
			got = e.Type == EventRefusal && strings.Contains(string(e.Data), `"task_id":"T-2026-050"`)
		case <-deadline:
			t.Fatal("no refusal event within 1s")
		}
	}
	c := f.client(t)
	c.signIn("tok-ana")
	_, page := c.do("GET", "/tasks/T-2026-050", nil, nil)
	if !strings.Contains(page, "payload.diff_summary: is required") || !strings.Contains(page, "Input of refusal #1") || !strings.Contains(page, "more bytes not shown") {
		t.Errorf("the task page does not show the refusal")
	}
}

// TestCardCache: a card changes with its decision, and each session's
// cards carry that session's CSRF token.
func TestCardCache(t *testing.T) {
	f := newFixture(t, testTokens)
	d := decision.Decision{ID: "lease-1-d1", Subject: "lease-1", Kind: "lease_release", Prompt: "Release lease 1?",
		Options: []decision.Option{{ID: "approve", Label: "Release"}}, Digest: strings.Repeat("cd", 32), RaisedAt: t0, Required: 2}
	save := func(rev int64, d decision.Decision) {
		t.Helper()
		if err := f.db.SaveDecisions(context.Background(), "lease-1", rev, []ssot.PendingDecision{{ID: d.ID, Kind: string(d.Kind), RaisedAt: t0, Body: mustJSON(t, d)}}); err != nil {
			t.Fatal(err)
		}
	}
	save(1, d)
	ana, ana2 := f.client(t), f.client(t)
	ana.signIn("tok-ana")
	ana2.signIn("tok-ana")
	_, p1 := ana.do("GET", "/", nil, nil)
	_, p2 := ana2.do("GET", "/", nil, nil)
	for i, p := range []string{p1, p2} {
		card := p[strings.Index(p, `data-decision-id="lease-1-d1"`):]
		if own, inCard := formValue(p, "csrf"), formValue(card, "csrf"); own == "" || own != inCard {
			t.Errorf("session %d: card CSRF %q, the page's %q", i+1, inCard, own)
		}
		if !strings.Contains(p, "0 of 2 approvals") {
			t.Errorf("session %d: no progress shown", i+1)
		}
	}
	if formValue(p1, "csrf") == formValue(p2, "csrf") {
		t.Error("two sessions share a CSRF token")
	}
	d.Approvals = []decision.Approval{{By: "bob", Channel: "slack", At: t0}}
	save(2, d)
	if _, p := ana.do("GET", "/", nil, nil); !strings.Contains(p, "1 of 2 approvals: bob") {
		t.Error("the card did not change with its decision")
	}
}

func TestGatesPanel(t *testing.T) {
	f := newFixture(t, testTokens)
	f.srv.panels = map[string]Panel{PanelGates: GatesPanel(f.db)}
	c := f.client(t)
	c.signIn("tok-exec")
	if _, page := c.do("GET", "/gates", nil, nil); !strings.Contains(page, `class="empty"`) {
		t.Error("no gates: no empty state")
	}
	g := ssot.GateRow{GateID: "g-1", Kind: "llm_call", AgentID: "codex", ProjectID: "p1", TaskID: "T-2026-001", Gated: true, Status: "pending",
		Model: "m", InputTokens: 1200, OutputTokens: 300, ReportedUSD: 0.5, CostUSD: 0.75, Mismatch: true, ReceivedAt: t0, Reasons: []string{"budget"}, Callback: "none", Body: []byte(`{}`)}
	if _, _, err := f.db.InsertGate(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	_, page := c.do("GET", "/gates", nil, nil)
	for _, want := range []string{">g-1<", "codex", `href="/tasks/T-2026-001"`, "0.7500 (reported 0.5000)", "1200 / 300", "pending"} {
		if !strings.Contains(page, want) {
			t.Errorf("the gates page lacks %q", want)
		}
	}
}

// TestWatchIdles looks at the store every IdlePoll while no page is open,
// and a page that opens wakes the watcher at once.
func TestWatchIdles(t *testing.T) {
	f := newFixture(t, testTokens)
	watching(t, f.srv)
	seedTask(t, f.db, "T-2026-060", 0)
	time.Sleep(3 * DefaultPoll) // idle: no look yet, so nothing is published
	sub, _, _ := f.srv.hub.subscribe("")
	defer f.srv.hub.unsubscribe(sub)
	select {
	case e := <-sub.ch:
		if e.Type != EventRecord {
			t.Fatalf("first event after waking: %s", e.Type)
		}
	case <-time.After(time.Second):
		t.Fatal("a page that opened did not wake the idle watcher")
	}
}

// TestVerification shows a chain edited behind the store's back as not
// verifying, once the last walk at that head is older than verifyFor.
func TestVerification(t *testing.T) {
	dir := t.TempDir()
	db, err := ssot.Open(context.Background(), dir+"/ampflow.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := t0
	s := New(Options{Store: db, Actions: &recorder{}, Now: func() time.Time { return now }})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	seedTask(t, db, "T-2026-070", 0)
	get := func() string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/tasks/T-2026-070")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return b.String()
	}
	if p := get(); !strings.Contains(p, "every record's hash holds") {
		t.Fatal("a chain as written does not verify")
	}
	raw, err := sql.Open("sqlite", dir+"/ampflow.db")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE records SET body = '{"edited":true}' WHERE id = 'T-2026-070-m1'`); err != nil {
		t.Fatal(err)
	}
	if p := get(); !strings.Contains(p, "every record's hash holds") {
		t.Fatal("the walk at the same head was not reused within verifyFor")
	}
	now = now.Add(verifyFor + time.Second)
	if p := get(); !strings.Contains(p, "Does not verify") || !strings.Contains(p, "T-2026-070-m1") {
		t.Fatalf("an edited record is not found:\n%s", p[strings.Index(p, `id="h-chain"`):][:600])
	}
}

func TestCrossSite(t *testing.T) {
	for _, tc := range []struct {
		name             string
		method, site     string
		mode, origin     string
		navigation, want bool
	}{
		{"SameOriginFetch", "GET", "same-origin", "cors", "", false, false},
		{"NoHeaders", "POST", "", "", "", false, false},
		{"CrossSiteFetch", "GET", "cross-site", "cors", "", false, true},
		{"CrossSiteLink", "GET", "cross-site", "navigate", "", true, false},
		{"CrossSiteLinkToStream", "GET", "cross-site", "navigate", "", false, true},
		{"SameSiteForm", "POST", "same-site", "navigate", "", false, true},
		{"TypedURL", "GET", "none", "navigate", "", true, false},
		{"ForeignOrigin", "POST", "", "", "http://evil.example", false, true},
		{"OwnOrigin", "POST", "same-origin", "navigate", "http://127.0.0.1:7480", false, false},
		{"NullOrigin", "POST", "", "", "null", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "http://127.0.0.1:7480/decisions/x", nil)
			for k, v := range map[string]string{"Sec-Fetch-Site": tc.site, "Sec-Fetch-Mode": tc.mode, "Origin": tc.origin} {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			if got := crossSite(r, tc.navigation); got != tc.want {
				t.Errorf("crossSite = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEventsRecheckSession: a stream whose session expires while it is
// open hears signed_out and ends, before the next event.
func TestEventsRecheckSession(t *testing.T) {
	f := newFixture(t, testTokens)
	c := f.client(t)
	if resp := c.signIn("tok-ana"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	var mu sync.Mutex
	now := time.Now()
	f.srv.auth.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.http.URL+"/events", nil)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "id: ") && !strings.HasPrefix(sc.Text(), "event: hello") {
		t.Fatalf("GET /events: %d, first line %q", resp.StatusCode, sc.Text())
	}
	mu.Lock()
	now = now.Add(f.srv.auth.ttl + time.Minute)
	mu.Unlock()
	f.srv.hub.publish(EventTask, taskEvent{TaskID: "T-1", Status: "dispatched"})
	var events []string
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, e)
		}
	}
	if len(events) == 0 || events[len(events)-1] != EventSignedOut || slices.Contains(events, EventTask) {
		t.Fatalf("after the session expired the stream sent %v, want it to end with %s and nothing of the task", events, EventSignedOut)
	}
}
