package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows"
)

// Tokens of the test server.
const (
	coordToken    = "coord-secret"
	executorToken = "exec-secret"
	reviewerToken = "review-secret"
	adminToken    = "admin-secret"
)

var testTokens = []config.AuthToken{
	{Token: coordToken, Role: amp.RoleCoordinator, Name: "gemini"},
	{Token: executorToken, Role: amp.RoleExecutor, Name: "codex"},
	{Token: reviewerToken, Role: amp.RoleReviewer, Name: "claude"},
	{Token: adminToken, Role: amp.RoleAdmin, Name: "kircerta"},
}

var testNow = time.Date(2026, 2, 26, 14, 0, 0, 0, time.UTC)

const validPlan = `{
  "description": "Reconstruct the breathing engine timing",
  "repo": "/Users/kircerta/dev/Rhylm",
  "branch": "feature/watch-breath-v2",
  "subtasks": [{"subtask_id": "T-2026-044-S1", "description": "Replace Timer", "estimated_lines": 60}],
  "acceptance_criteria": ["Resume after background suspension"],
  "risk_level": "medium"
}`

const taskResult = `{
  "msg_id": "task_result-T-2026-044-1740581280000",
  "protocol_version": "AMP/1.0",
  "type": "task_result",
  "from": "executor",
  "to": "coordinator",
  "task_id": "T-2026-044",
  "timestamp": "2026-02-26T14:48:00+00:00",
  "requires_ack": true,
  "ack_timeout_sec": 120,
  "payload": {
    "subtask_id": "T-2026-044-S1",
    "completion_status": "complete",
    "diff_summary": {"files_changed": ["BreathEngine.swift"], "lines_added": 68, "lines_removed": 24},
    "self_assessment": {"criteria_met": [true], "notes": ["verified in the simulator"]},
    "work_log": [{"timestamp": "2026-02-26T14:28:00Z", "action": "replace_timer", "file": "BreathEngine.swift", "detail": "done"}]
  }
}`

const reviewVerdict = `{
  "msg_id": "review_verdict-T-2026-044-1740582300000",
  "protocol_version": "AMP/1.0",
  "type": "review_verdict",
  "from": "reviewer",
  "to": "coordinator",
  "task_id": "T-2026-044",
  "timestamp": "2026-02-26T15:05:00+00:00",
  "requires_ack": true,
  "ack_timeout_sec": 60,
  "payload": {
    "decision": "approved",
    "criteria_results": [{"criterion": "Resume after background suspension", "passed": true, "evidence": "tested"}],
    "confidence": 0.95
  }
}`

const ackRecord = `{
  "msg_id": "ack-T-2026-044-1740576730000",
  "protocol_version": "AMP/1.0",
  "ack_of": "task_dispatch-T-2026-044-1740576727001",
  "task_id": "T-2026-044",
  "from": "executor",
  "timestamp": "2026-02-26T14:32:10+00:00"
}`

// fakeTasks records calls and answers from its fields; err, when set,
// is returned by every method.
type fakeTasks struct {
	mu    sync.Mutex
	err   error
	calls []string

	started   []task.Input
	submitted [][]byte
	acked     []string
	cancels   []task.CancelInput
	replans   []task.ReplanInput
	decides   []decision.Answer
	beats     []task.HeartbeatInput
	listArgs  []string
	summaries []workflows.TaskSummary
	state     task.State
	// agents are the agents (workflows.AgentFrom) of Submit, Ack and
	// Heartbeat, in order; warnings are what Submit answers with.
	agents   []string
	warnings []string
	// decideErr and decideRes, when set, are what Decide answers.
	decideErr error
	decideRes *task.DecideResult
}

var _ workflows.Tasks = (*fakeTasks)(nil)

func (f *fakeTasks) call(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	return f.err
}

func (f *fakeTasks) Start(_ context.Context, in task.Input) error {
	if err := f.call("Start"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, in)
	return nil
}

func (f *fakeTasks) StartNext(_ context.Context, in task.Input, year int) (string, error) {
	if err := f.call("StartNext"); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	in.TaskID = fmt.Sprintf("T-%04d-007", year)
	f.started = append(f.started, in)
	return in.TaskID, nil
}

func (f *fakeTasks) agent(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.agents = append(f.agents, workflows.AgentFrom(ctx).Name)
}

func (f *fakeTasks) Submit(ctx context.Context, raw []byte) (task.SubmitResult, error) {
	f.agent(ctx)
	if err := f.call("Submit"); err != nil {
		return task.SubmitResult{}, err
	}
	rec, err := amp.ParseRecord(raw)
	if err != nil {
		return task.SubmitResult{}, workflows.InvalidRecord(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submitted = append(f.submitted, raw)
	return task.SubmitResult{MsgID: rec.ID(), Status: task.StatusInReview, Duplicate: len(f.submitted) > 1, Warnings: f.warnings}, nil
}

func (f *fakeTasks) Ack(ctx context.Context, msgID string, as amp.Role) (task.SubmitResult, error) {
	f.agent(ctx)
	if err := f.call("Ack"); err != nil {
		return task.SubmitResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acked = append(f.acked, msgID+" as "+string(as))
	return task.SubmitResult{MsgID: "ack-T-2026-044-1740576730000", Status: task.StatusInProgress}, nil
}

func (f *fakeTasks) Decide(_ context.Context, taskID string, in decision.Answer) (task.DecideResult, error) {
	if err := f.call("Decide " + taskID); err != nil {
		return task.DecideResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decides = append(f.decides, in)
	if f.decideErr != nil {
		return task.DecideResult{}, f.decideErr
	}
	if f.decideRes != nil {
		return *f.decideRes, nil
	}
	return task.DecideResult{Outcome: decision.Outcome{DecisionID: in.DecisionID, Option: in.Option, By: in.By}, Status: task.StatusDispatched}, nil
}

func (f *fakeTasks) Cancel(_ context.Context, taskID string, in task.CancelInput) (task.ChangeResult, error) {
	if err := f.call("Cancel " + taskID); err != nil {
		return task.ChangeResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, in)
	return task.ChangeResult{Status: task.StatusTerminated}, nil
}

func (f *fakeTasks) Replan(_ context.Context, taskID string, in task.ReplanInput) (task.ChangeResult, error) {
	if err := f.call("Replan " + taskID); err != nil {
		return task.ChangeResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replans = append(f.replans, in)
	return task.ChangeResult{Status: task.StatusDispatched}, nil
}

func (f *fakeTasks) Heartbeat(ctx context.Context, taskID string, in task.HeartbeatInput) error {
	f.agent(ctx)
	if err := f.call("Heartbeat " + taskID); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats = append(f.beats, in)
	return nil
}

func (f *fakeTasks) State(_ context.Context, taskID string) (task.State, error) {
	if err := f.call("State " + taskID); err != nil {
		return task.State{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state, nil
}

func (f *fakeTasks) List(_ context.Context, status task.Status, limit int) ([]workflows.TaskSummary, error) {
	if err := f.call("List"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listArgs = append(f.listArgs, string(status)+"/"+strconv.Itoa(limit))
	return f.summaries, nil
}

// Inbox and Pending are read from the SSOT store; the API never asks
// the workflows.
func (f *fakeTasks) Inbox(_ context.Context, role amp.Role) ([]amp.Message, error) {
	return nil, f.call("Inbox " + string(role))
}

func (f *fakeTasks) Pending(context.Context) ([]decision.Decision, error) {
	return nil, f.call("Pending")
}

func (f *fakeTasks) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// testStore is a real SSOT on SQLite in the test's temporary directory,
// with a count of inbox reads and a hook run before each, so long-poll
// tests can add a message between looks.
type testStore struct {
	*ssot.DB
	t         testing.TB
	mu        sync.Mutex
	rev       int64
	inboxN    int
	inboxHook func(n int)
}

func newTestStore(t testing.TB) *testStore {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &testStore{DB: db, t: t}
}

func (s *testStore) InboxOf(ctx context.Context, f ssot.InboxFilter, p ssot.Page) ([]ssot.OutboxMessage, string, error) {
	s.mu.Lock()
	s.inboxN++
	n, hook := s.inboxN, s.inboxHook
	s.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return s.DB.InboxOf(ctx, f, p)
}

func (s *testStore) inboxReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inboxN
}

// save replaces a task's read rows as the workflow's record would.
func (s *testStore) save(taskID string, outbox []amp.Message, pending *decision.Decision) {
	s.t.Helper()
	s.mu.Lock()
	s.rev++
	st := ssot.TaskState{TaskID: taskID, Rev: s.rev, Status: string(task.StatusDispatched), StartedAt: testNow, UpdatedAt: testNow, State: json.RawMessage(`{}`)}
	s.mu.Unlock()
	for _, m := range outbox {
		b, err := json.Marshal(m)
		if err != nil {
			s.t.Fatal(err)
		}
		at, _ := time.Parse(time.RFC3339, m.Timestamp)
		st.Outbox = append(st.Outbox, ssot.OutboxMessage{MsgID: m.MsgID, TaskID: taskID, Role: string(m.To), Type: string(m.Type), SentAt: at, Body: b})
	}
	var entries []ssot.Entry
	if pending != nil {
		b, err := json.Marshal(pending)
		if err != nil {
			s.t.Fatal(err)
		}
		st.Pending = []ssot.PendingDecision{{ID: pending.ID, Subject: pending.Subject, Kind: string(pending.Kind), RaisedAt: pending.RaisedAt, Body: b}}
		// The workflow records a decision as it opens it.
		entries = append(entries, ssot.Entry{ID: pending.ID, Kind: string(ssot.KindDecision), RecordedAt: pending.RaisedAt, Body: b})
	}
	if _, err := s.Save(context.Background(), taskID, entries, &st); err != nil {
		s.t.Fatal(err)
	}
}

// setInbox puts msgs in their tasks' outboxes.
func (s *testStore) setInbox(msgs []amp.Message) {
	byTask := map[string][]amp.Message{}
	for _, m := range msgs {
		byTask[m.TaskID] = append(byTask[m.TaskID], m)
	}
	for id, ms := range byTask {
		s.save(id, ms, nil)
	}
}

// saveTasks keeps each task's listed fields as the workflow's record
// would.
func (s *testStore) saveTasks(tasks ...workflows.TaskSummary) {
	s.t.Helper()
	for _, t := range tasks {
		s.mu.Lock()
		s.rev++
		st := ssot.TaskState{TaskID: t.TaskID, Rev: s.rev, Status: string(t.Status), Risk: t.Risk, Repo: t.Repo,
			RejectCount: int(t.RejectCount), StartedAt: t.StartedAt, UpdatedAt: t.StartedAt, State: json.RawMessage(`{}`)}
		s.mu.Unlock()
		if st.Status == "" {
			st.Status = string(task.StatusDispatched)
		}
		if _, err := s.Save(context.Background(), t.TaskID, nil, &st); err != nil {
			s.t.Fatal(err)
		}
	}
}

// addRecords appends records to a task's chain.
func (s *testStore) addRecords(taskID string, es ...ssot.Entry) {
	s.t.Helper()
	if _, err := s.Append(context.Background(), taskID, es); err != nil {
		s.t.Fatal(err)
	}
}

func (s *testStore) errorLog() []ssot.ErrorEntry {
	s.t.Helper()
	es, _, err := s.Errors(context.Background(), ssot.Page{Limit: ssot.MaxLimit})
	if err != nil {
		s.t.Fatal(err)
	}
	return es
}

type harness struct {
	tasks *fakeTasks
	store *testStore
	srv   *Server
	ts    *httptest.Server
}

// newHarness serves a Server with the test tokens (none when open) on a
// loopback httptest server.
func newHarness(t *testing.T, open bool) *harness {
	t.Helper()
	h := &harness{tasks: &fakeTasks{}, store: newTestStore(t)}
	opts := Options{Tasks: h.tasks, Store: h.store, Now: func() time.Time { return testNow }, PollInterval: 10 * time.Millisecond,
		RunKey: testRunKey}
	if !open {
		opts.Tokens = testTokens
	}
	h.srv = New(opts)
	h.ts = httptestServer(t, h.srv.Handler())
	return h
}

// httptestServer serves handler on loopback until the test ends.
func httptestServer(t *testing.T, handler http.Handler) *httptest.Server {
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	return ts
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorBody(t *testing.T) errorDetail {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("body %s is not an API error (%v)", r.body, err)
	}
	return e.Error
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

func (h *harness) do(t *testing.T, method, path, token, body string) response {
	t.Helper()
	return h.doCtx(t, context.Background(), method, path, token, body)
}

func (h *harness) doCtx(t *testing.T, ctx context.Context, method, path, token, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return h.send(t, req)
}

// send sends req to the test server and reads the whole answer.
func (h *harness) send(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s %s: %v", req.Method, req.URL.Path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
}

func hasField(fields []amp.FieldError, path string) bool {
	for _, f := range fields {
		if f.Path == path {
			return true
		}
	}
	return false
}
