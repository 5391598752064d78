package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

var t0 = time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)

func openStore(t testing.TB) *ssot.DB {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// planDecision is the plan approval of a task as the task workflow raises
// it.
func planDecision(taskID string, n int) decision.Decision {
	d := decision.Decision{
		ID: fmt.Sprintf("%s-d%d", taskID, n), Subject: taskID, Kind: task.KindPlanApproval,
		Prompt: "Approve the plan of " + taskID + "?",
		Options: []decision.Option{
			{ID: decision.OptApprove, Label: "Approve"},
			{ID: decision.OptReject, Label: "Reject", NoteRequired: true},
		},
		Context:  decision.Context{Description: "Add a health check", Repo: "/src/app", Branch: "feature/health", Risk: amp.RiskLow},
		RaisedAt: t0, Required: 1, OnExpiry: decision.OptReject,
	}
	d.Digest, _ = decision.Digest(map[string]any{"task": taskID, "n": n})
	return d
}

// seedTask saves a task awaiting plan approval: a dispatch message, the
// decision's record and the open decision.
func seedTask(t testing.TB, db *ssot.DB, taskID string, extra int) decision.Decision {
	t.Helper()
	d := planDecision(taskID, 1)
	dispatch := map[string]any{
		"msg_id": taskID + "-m1", "type": "task_dispatch", "from": "coordinator", "to": "executor", "task_id": taskID,
		"payload": map[string]any{"description": "Add a health check", "acceptance_criteria": []string{"GET /healthz answers 200"}},
	}
	entries := []ssot.Entry{
		{ID: taskID + "-m1", Kind: "message", RecordedAt: t0, Body: mustJSON(t, dispatch)},
		{ID: d.ID, Kind: "decision", RecordedAt: t0, Body: mustJSON(t, d)},
	}
	for i := range extra {
		entries = append(entries, ssot.Entry{ID: fmt.Sprintf("%s-h%d", taskID, i), Kind: "event", RecordedAt: t0.Add(time.Duration(i) * time.Second),
			Body: mustJSON(t, map[string]any{"type": "heartbeat", "from": "executor", "note": strings.Repeat("working ", 20)})})
	}
	st := taskState(t, taskID, 1, task.StatusAwaitingApproval, &d)
	if _, err := db.Save(context.Background(), taskID, entries, &st); err != nil {
		t.Fatal(err)
	}
	return d
}

func taskState(t testing.TB, taskID string, rev int64, status task.Status, pending *decision.Decision, mutate ...func(*task.State)) ssot.TaskState {
	view := task.State{
		TaskID: taskID, Status: status, Risk: amp.RiskLow, Description: "Add a health check", Repo: "/src/app", Branch: "feature/health",
		Subtasks: []amp.Subtask{{SubtaskID: "s1", Description: "Write the handler", EstimatedLines: 40}, {SubtaskID: "s2", Description: "Test it"}},
		Pending:  pending,
		Holders: []task.Holder{{Role: amp.RoleExecutor, Agent: "codex", MsgID: "task_dispatch-" + taskID + "-1", Since: t0,
			Unanswered: &amp.Message{MsgID: "task_dispatch-" + taskID + "-1"}}},
		StartedAt: t0, UpdatedAt: t0.Add(time.Duration(rev) * time.Minute),
		CostUSD: 0.0123, Tokens: task.Tokens{Input: 1200, Output: 300},
		Spend: []task.Spend{{Role: amp.RoleExecutor, CostUSD: 0.0123, Tokens: task.Tokens{Input: 1200, Output: 300}, Runs: 1, CapUSD: 5}},
	}
	for _, m := range mutate {
		m(&view)
	}
	st := ssot.TaskState{TaskID: taskID, Rev: rev, Status: string(status), Risk: "low", Repo: "/src/app", StartedAt: t0, UpdatedAt: view.UpdatedAt, State: mustJSON(t, view)}
	if pending != nil {
		st.Pending = []ssot.PendingDecision{{ID: pending.ID, Subject: taskID, Kind: string(pending.Kind), RaisedAt: pending.RaisedAt, Body: mustJSON(t, pending)}}
	}
	return st
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeEngine answers as a task's decision engine does: the digest must
// be the open decision's, the first answer closes it, and the store gets
// the outcome and the task's next state.
type fakeEngine struct {
	t  testing.TB
	db *ssot.DB
	mu sync.Mutex
	// answers are every answer received.
	answers []decision.Answer
	cancels []task.CancelInput
	starts  []task.Input
}

func (f *fakeEngine) Decide(ctx context.Context, subject string, in decision.Answer) (task.DecideResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, in)
	st, err := f.db.Task(ctx, subject)
	if err != nil {
		return task.DecideResult{}, err
	}
	if len(st.Pending) == 0 || st.Pending[0].ID != in.DecisionID {
		return task.DecideResult{}, &task.Error{Code: task.CodeDecided, Message: "decision " + in.DecisionID + " is closed"}
	}
	var d decision.Decision
	_ = json.Unmarshal(st.Pending[0].Body, &d)
	if in.Digest != d.Digest {
		return task.DecideResult{}, &task.Error{Code: task.CodeStaleDecision, Message: "the digest is not the open decision's"}
	}
	o := decision.Outcome{DecisionID: d.ID, Subject: subject, Kind: d.Kind, Option: in.Option, Note: in.Note, By: in.By, Channel: in.Channel, At: t0.Add(time.Hour), Digest: d.Digest}
	next := taskState(f.t, subject, st.Rev+1, task.StatusDispatched, nil)
	if _, err := f.db.Save(ctx, subject, []ssot.Entry{{ID: d.ID + "-outcome", Kind: "decision", RecordedAt: o.At, Body: mustJSON(f.t, o)}}, &next); err != nil {
		return task.DecideResult{}, err
	}
	return task.DecideResult{Outcome: o, Status: task.StatusDispatched}, nil
}

func (f *fakeEngine) Cancel(ctx context.Context, taskID string, in task.CancelInput) (task.ChangeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, in)
	return task.ChangeResult{Status: task.StatusTerminated}, nil
}

func (f *fakeEngine) Replan(ctx context.Context, taskID string, in task.ReplanInput) (task.ChangeResult, error) {
	return task.ChangeResult{Status: task.StatusDispatched}, nil
}

func (f *fakeEngine) StartNext(ctx context.Context, in task.Input, year int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, in)
	return fmt.Sprintf("T-%d-%03d", year, len(f.starts)), nil
}

func (f *fakeEngine) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.answers) + len(f.cancels)
}

var testTokens = []config.AuthToken{
	{Token: "tok-ana", Role: amp.RoleAdmin, Name: "ana"},
	{Token: "tok-exec", Role: amp.RoleExecutor, Name: "codex"},
}

type fixture struct {
	db     *ssot.DB
	engine *fakeEngine
	srv    *Server
	http   *httptest.Server
}

func newFixture(t testing.TB, tokens []config.AuthToken) *fixture {
	t.Helper()
	db := openStore(t)
	f := &fixture{db: db, engine: &fakeEngine{t: t, db: db}}
	f.srv = New(Options{Store: db, Actions: f.engine, Tokens: tokens, OpenName: "dev", MaxRejects: 3, Poll: 50 * time.Millisecond})
	f.http = httptest.NewServer(f.srv.Handler())
	t.Cleanup(f.http.Close)
	return f
}

// client is a browser of one session: it keeps cookies and sends what a
// browser sends with a same-origin form.
type client struct {
	t  testing.TB
	f  *fixture
	hc *http.Client
}

func (f *fixture) client(t testing.TB) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, f: f, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *client) do(method, path string, form url.Values, header http.Header) (*http.Response, string) {
	c.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, c.f.http.URL+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, sb.String()
}

// signIn signs in with tok through the sign-in form.
func (c *client) signIn(tok string) *http.Response {
	c.t.Helper()
	_, page := c.do("GET", "/signin", nil, nil)
	resp, _ := c.do("POST", "/signin", url.Values{"token": {tok}, "csrf": {formValue(page, "csrf")}, "next": {"/"}}, browserHeaders(c.f))
	return resp
}

func browserHeaders(f *fixture) http.Header {
	return http.Header{"Origin": {f.http.URL}, "Sec-Fetch-Site": {"same-origin"}}
}

// formValue reads the value of the first input named name in page.
func formValue(page, name string) string {
	i := strings.Index(page, `name="`+name+`" value="`)
	if i < 0 {
		return ""
	}
	rest := page[i+len(`name="`+name+`" value="`):]
	return rest[:strings.IndexByte(rest, '"')]
}

// watching starts s's watcher and waits for its first look at the store.
func watching(t testing.TB, s *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Watch(ctx)
	select {
	case <-s.looked:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not look at the store within 5s")
	}
}
