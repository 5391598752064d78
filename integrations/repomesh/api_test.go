package repomesh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/lease/leasetest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
)

type harness struct {
	url    string
	store  *ssot.DB
	leases *leasetest.Client
	tasks  *fakeTasks
	logs   *syncBuffer
}

// syncBuffer is a log's output, written by the handlers and read by tests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeTasks keeps the heartbeats sent to tasks and the tasks started.
type fakeTasks struct {
	mu      sync.Mutex
	beats   []string
	started []task.Input
	err     error
}

func (f *fakeTasks) StartNext(_ context.Context, in task.Input, year int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", f.err
	}
	// As workflows.Client: a start under a request key used before
	// answers the task it started.
	for i, s := range f.started {
		if in.RequestKey != "" && s.RequestKey == in.RequestKey {
			return fmt.Sprintf("T-%d-%03d", year, 101+i), nil
		}
	}
	f.started = append(f.started, in)
	return fmt.Sprintf("T-%d-%03d", year, 100+len(f.started)), nil
}

func (f *fakeTasks) Heartbeat(_ context.Context, taskID string, in task.HeartbeatInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats = append(f.beats, fmt.Sprintf("%s %s %v", taskID, in.From, in.Recovered))
	return nil
}

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789ab"
	adminToken = "admin-token-0123456789"
	carolToken = "carol-token-0123456789"
	carolID    = "28a5d3df-6104-4009-8f3a-897671ea28d7"
)

func newHarness(t *testing.T) *harness {
	t.Helper()
	store, _ := httpapitest.Store(t)
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	fl := leasetest.New()
	start := now
	fl.Now = func() time.Time { return start }
	srv := httpapi.New(httpapi.Options{Tokens: []config.AuthToken{
		{Token: aliceToken, Role: amp.RoleExecutor, Name: "alice"},
		{Token: bobToken, Role: amp.RoleReviewer, Name: "bob"},
		{Token: adminToken, Role: amp.RoleAdmin, Name: "root"},
		{Token: carolToken, Role: amp.RoleExecutor, Name: "carol", ID: carolID},
	}, PollInterval: 10 * time.Millisecond})
	var tick sync.Mutex
	ft := &fakeTasks{}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	Register(srv, Options{Leases: fl, Store: store, Tasks: ft, Logger: log, Now: func() time.Time {
		tick.Lock()
		defer tick.Unlock()
		now = now.Add(time.Second)
		return now
	}})
	// Leases the fake grants are recorded as the workflow's activity would.
	return &harness{url: httpapitest.Serve(t, srv), store: store, leases: fl, tasks: ft, logs: logs}
}

type answer struct {
	status int
	body   []byte
}

func (h *harness) do(t *testing.T, method, path, token, body string) answer {
	t.Helper()
	r := httpapitest.Do(t, method, h.url+path, token, body)
	return answer{r.Status, r.Body}
}

func (a answer) want(t *testing.T, status int, v any) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	if v != nil {
		if err := json.Unmarshal(a.body, v); err != nil {
			t.Fatalf("%s: %v", a.body, err)
		}
	}
}

func TestLeaseRoutes(t *testing.T) {
	h := newHarness(t)
	var l Lease
	h.do(t, "POST", "/v1/leases", aliceToken, `{"resource_key":"file:app/README.md","agent_id":"alice","ttl_seconds":300}`).want(t, 201, &l)
	if l.State != "active" || !l.AutoRelease || l.TTLSeconds != 300 || l.AgentID != "alice" || l.LeaseID == "" {
		t.Fatalf("lease %+v", l)
	}
	t.Run("Conflict", func(t *testing.T) {
		var c ConflictBody
		h.do(t, "POST", "/v1/leases", bobToken, `{"resource_key":"file:app/README.md","ttl_seconds":60}`).want(t, 409, &c)
		if c.Error.Code != CodeLockConflict || c.Error.Holder != "alice" || c.Error.RetryAfterMS != 12000 {
			t.Fatalf("conflict %+v", c)
		}
		evs, _, err := h.store.MeshInbox(context.Background(), ssot.InboxQuery{Recipients: []string{"bob"}}, ssot.Page{})
		if err != nil || len(evs) != 1 || evs[0].Type != TypeError || !strings.Contains(string(evs[0].Payload), `"retry_after_ms":12000`) {
			t.Fatalf("bob's inbox after the conflict: %+v %v", evs, err)
		}
		if logs := h.logs.String(); !strings.Contains(logs, "code=LOCK_CONFLICT") || !strings.Contains(logs, "path=/v1/leases") {
			t.Fatalf("the conflict is not logged as a refusal: %s", logs)
		}
	})
	t.Run("SpeaksOnlyAsItself", func(t *testing.T) {
		var e struct{ Error struct{ Code string } }
		h.do(t, "POST", "/v1/leases", bobToken, `{"resource_key":"x","agent_id":"alice","ttl_seconds":60}`).want(t, 403, &e)
		if e.Error.Code != string(CodePermissionDenied) {
			t.Fatalf("code %s", e.Error.Code)
		}
		h.do(t, "POST", "/v1/leases", adminToken, `{"resource_key":"y","agent_id":"alice","ttl_seconds":60}`).want(t, 201, nil)
	})
	t.Run("Bounds", func(t *testing.T) {
		for _, body := range []string{`{"resource_key":"x","ttl_seconds":0}`, `{"resource_key":"x","ttl_seconds":86401}`,
			`{"resource_key":"","ttl_seconds":60}`, `{"resource_key":"x","ttl_seconds":60,"extra":1}`} {
			h.do(t, "POST", "/v1/leases", aliceToken, body).want(t, 400, nil)
		}
	})
	t.Run("Heartbeat", func(t *testing.T) {
		var r Lease
		h.do(t, "POST", "/v1/leases/"+l.LeaseID+"/heartbeat", aliceToken, `{"agent_id":"alice","ttl":120}`).want(t, 200, &r)
		if r.TTLSeconds != 120 {
			t.Fatalf("renewed %+v", r)
		}
		h.do(t, "POST", "/v1/leases/"+l.LeaseID+"/heartbeat", bobToken, `{"ttl":120}`).want(t, 403, nil)
		// bob is told in the mesh, as of every refusal
		evs, _, err := h.store.SearchEvents(context.Background(), ssot.SearchQuery{To: "bob", Type: TypeError}, ssot.Page{})
		if err != nil || len(evs) == 0 || !strings.Contains(string(evs[0].Payload), `"original_action":"lease.heartbeat"`) {
			t.Fatalf("bob's agent.error after renewing alice's lease: %+v %v", evs, err)
		}
		h.do(t, "POST", "/v1/leases/Lnope.eA/heartbeat", aliceToken, `{"ttl":120}`).want(t, 404, nil)
		// without ttl, the lease's own is read from the SSOT, which knows none
		h.do(t, "POST", "/v1/leases/Lnope.eA/heartbeat", aliceToken, `{}`).want(t, 404, nil)
	})
	t.Run("Release", func(t *testing.T) {
		h.do(t, "DELETE", "/v1/leases/"+l.LeaseID, bobToken, "").want(t, 403, nil)
		evs, _, err := h.store.SearchEvents(context.Background(), ssot.SearchQuery{To: "bob", Type: TypeError}, ssot.Page{})
		if err != nil || len(evs) == 0 || !strings.Contains(string(evs[0].Payload), `"original_action":"lease.release"`) {
			t.Fatalf("bob's agent.error after releasing alice's lease: %+v %v", evs, err)
		}
		h.do(t, "DELETE", "/v1/leases/"+l.LeaseID, aliceToken, "").want(t, 200, nil)
		h.do(t, "DELETE", "/v1/leases/"+l.LeaseID, aliceToken, "").want(t, 404, nil)
	})
	t.Run("List", func(t *testing.T) {
		at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		for i, agent := range []string{"alice", "bob", "alice"} {
			if err := h.store.RecordLease(context.Background(), ssot.MeshLease{LeaseID: fmt.Sprintf("L%d.x", i), ResourceKey: "k",
				AgentID: agent, State: "active", TTLSeconds: 60, AcquiredAt: at.Add(time.Duration(i) * time.Second),
				ExpiresAt: at, LastHeartbeat: at, Version: 1}, nil); err != nil {
				t.Fatal(err)
			}
		}
		var list LeaseList
		h.do(t, "GET", "/v1/leases?agent_id=alice&state=active&limit=1", bobToken, "").want(t, 200, &list)
		if len(list.Leases) != 1 || list.Leases[0].LeaseID != "L2.x" || list.NextCursor == "" {
			t.Fatalf("list %+v", list)
		}
		h.do(t, "GET", "/v1/leases?state=stale", bobToken, "").want(t, 400, nil)
	})
}

func TestAgentHeartbeatReleasesLeases(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for _, key := range []string{"a", "b"} {
		var l Lease
		h.do(t, "POST", "/v1/leases", aliceToken, `{"resource_key":"`+key+`","ttl_seconds":60}`).want(t, 201, &l)
		// as the lease workflow's activity writes it
		if err := h.store.RecordLease(ctx, ssot.MeshLease{LeaseID: l.LeaseID, ResourceKey: key, AgentID: "alice", State: "active",
			TTLSeconds: 60, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt, LastHeartbeat: l.LastHeartbeat, Version: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, st := range []string{"in_progress", "in_review", "dispatched", "done", "in_progress"} {
		id := fmt.Sprintf("T-2026-00%d", i+1)
		if _, err := h.store.Save(ctx, id, nil, &ssot.TaskState{TaskID: id, Rev: 1, Status: st, State: json.RawMessage(`{}`),
			StartedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// alice took T-2026-001's and T-2026-003's dispatches (and the done
	// T-2026-004's), carol T-2026-005's.
	h.deliver(t, "T-2026-001", "alice", amp.RoleExecutor)
	h.deliver(t, "T-2026-003", "alice", amp.RoleExecutor)
	h.deliver(t, "T-2026-004", "alice", amp.RoleExecutor)
	h.deliver(t, "T-2026-005", "carol", amp.RoleExecutor)
	h.do(t, "POST", "/v1/agents/alice/heartbeat", bobToken, `{"status":"recovered"}`).want(t, 403, nil)
	h.do(t, "POST", "/v1/agents/alice/heartbeat", aliceToken, `{"status":"sleeping"}`).want(t, 400, nil)
	var out AgentHeartbeatResponse
	h.do(t, "POST", "/v1/agents/alice/heartbeat", aliceToken, `{"status":"recovered"}`).want(t, 200, &out)
	if released := h.leases.Called("release"); len(out.Released) != 2 || len(released) != 2 || !strings.HasSuffix(released[0], lease.ReasonAgentRecovered) {
		t.Fatalf("released %v (workflow saw %v)", out.Released, released)
	}
	// alice's token is an executor's: her tasks waiting for the executor
	// send their dispatch again; carol's does not.
	if got := fmt.Sprint(h.tasks.beats); got != "[T-2026-003 executor true T-2026-001 executor true]" || fmt.Sprint(out.Redispatched) != "[T-2026-003 T-2026-001]" {
		t.Fatalf("heartbeats to tasks %s, redispatched %v", got, out.Redispatched)
	}
	e, err := h.store.Event(ctx, out.EventID)
	if err != nil || e.Content != RecoveredMessage || e.From != "alice" || e.To != "all" {
		t.Fatalf("echo %+v %v", e, err)
	}
	h.do(t, "POST", "/v1/agents/alice/heartbeat", aliceToken, `{"status":"active"}`).want(t, 200, &out)
}

func TestAgentHeartbeatRoleIsTheTokens(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.store.Save(ctx, "T-2026-001", nil, &ssot.TaskState{TaskID: "T-2026-001", Rev: 1, Status: "in_review",
		State: json.RawMessage(`{}`), StartedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	// alice's token is an executor's: she may not redispatch a reviewer's task.
	h.do(t, "POST", "/v1/agents/alice/heartbeat", aliceToken, `{"status":"recovered","role":"reviewer"}`).want(t, 403, &e)
	if e.Error.Code != string(CodePermissionDenied) || len(h.tasks.beats) != 0 {
		t.Fatalf("refusal %+v, heartbeats sent %v", e.Error, h.tasks.beats)
	}
	h.do(t, "POST", "/v1/agents/alice/heartbeat", aliceToken, `{"status":"recovered","role":"chief"}`).want(t, 400, &e)
	if !strings.Contains(e.Error.Message, "executor, reviewer, coordinator or admin") {
		t.Fatalf("invalid role: %s", e.Error.Message)
	}
	h.do(t, "POST", "/v1/agents/alice/heartbeat", aliceToken, `{"status":"recovered","role":"executor"}`).want(t, 200, nil)
	if len(h.tasks.beats) != 0 {
		t.Fatalf("an executor's heartbeat redispatched %v", h.tasks.beats)
	}
	h.deliver(t, "T-2026-001", "bob", amp.RoleReviewer)
	var out AgentHeartbeatResponse
	h.do(t, "POST", "/v1/agents/bob/heartbeat", adminToken, `{"status":"recovered","role":"reviewer"}`).want(t, 200, &out)
	if fmt.Sprint(out.Redispatched) != "[T-2026-001]" {
		t.Fatalf("an admin's heartbeat for a reviewer redispatched %v", out.Redispatched)
	}
}

func TestReservedLeaseKeys(t *testing.T) {
	h := newHarness(t)
	for _, key := range []string{task.BranchLeaseKey("app", "main"), ClaimKey("T-2026-001"), "aof/T-7"} {
		t.Run(key, func(t *testing.T) {
			for _, token := range []string{aliceToken, adminToken} {
				var e struct {
					Error struct {
						Code, Message string
						Fields        []amp.FieldError
					}
				}
				h.do(t, "POST", "/v1/leases", token, `{"resource_key":"`+key+`","ttl_seconds":60}`).want(t, 403, &e)
				prefix := key[:strings.IndexAny(key, ":/")+1]
				if e.Error.Code != string(CodePermissionDenied) || len(e.Error.Fields) != 1 || e.Error.Fields[0].Path != "resource_key" ||
					!strings.Contains(e.Error.Message, `"`+prefix+`"`) {
					t.Fatalf("refusal %+v", e.Error)
				}
			}
			if h.leases.Held(key) != nil {
				t.Fatalf("%s was taken", key)
			}
		})
	}
	// The system's own claim on a task still takes task:<id>.
	h.do(t, "POST", "/v1/events", aliceToken, `{"type":"task.claimed","severity":"info","payload":{"task_id":"T-2026-001","agent_id":"alice","lease_ttl":60}}`).want(t, 201, nil)
	if l := h.leases.Held(ClaimKey("T-2026-001")); l == nil || l.AgentID != "alice" {
		t.Fatalf("claim lease %+v", l)
	}
}

// deliver records that agent, as role, acknowledged a message of taskID,
// as the API's tasks do.
func (h *harness) deliver(t *testing.T, taskID, agent string, role amp.Role) {
	t.Helper()
	typ := amp.TypeTaskDispatch
	if role == amp.RoleReviewer {
		typ = amp.TypeReviewRequest
	}
	msgID := fmt.Sprintf("%s-%s-1700000000000", typ, taskID)
	if _, err := h.store.AppendEvent(context.Background(), activities.DeliveredEvent(taskID, msgID, agent, role, time.Now())); err != nil {
		t.Fatal(err)
	}
}

func TestAgentRecoveredRedispatchesItsOwnTasks(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for _, id := range []string{"T-2026-001", "T-2026-002"} {
		if _, err := h.store.Save(ctx, id, nil, &ssot.TaskState{TaskID: id, Rev: 1, Status: "in_progress",
			State: json.RawMessage(`{}`), StartedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	h.deliver(t, "T-2026-002", "carol", amp.RoleExecutor)
	// A delivery is ampflow's record: no agent posts one.
	h.do(t, "POST", "/v1/events", aliceToken, `{"type":"task.delivered","severity":"info","payload":{"task_id":"T-2026-001","agent_id":"alice","role":"executor"}}`).want(t, 400, nil)
	var out AgentHeartbeatResponse
	t.Run("OnlyDelivered", func(t *testing.T) {
		// carol reports by her id; alice was delivered nothing.
		h.do(t, "POST", "/v1/agents/alice/heartbeat", aliceToken, `{"status":"recovered"}`).want(t, 200, &out)
		if len(out.Redispatched) != 0 || len(h.tasks.beats) != 0 {
			t.Fatalf("alice's recovery redispatched %v", h.tasks.beats)
		}
		h.do(t, "POST", "/v1/agents/"+carolID+"/heartbeat", carolToken, `{"status":"recovered"}`).want(t, 200, &out)
		if fmt.Sprint(out.Redispatched) != "[T-2026-002]" || fmt.Sprint(h.tasks.beats) != "[T-2026-002 executor true]" {
			t.Fatalf("carol's recovery redispatched %v (%v)", out.Redispatched, h.tasks.beats)
		}
	})
	t.Run("RateLimited", func(t *testing.T) {
		a := h.do(t, "POST", "/v1/agents/"+carolID+"/heartbeat", carolToken, `{"status":"inactive"}`)
		var e struct{ Error struct{ Code string } }
		a.want(t, 429, &e)
		if e.Error.Code != string(task.CodeRateLimited) || len(h.tasks.beats) != 1 {
			t.Fatalf("a second report within %s: %s, heartbeats %v", RecoverEvery, a.body, h.tasks.beats)
		}
		// active is not a restart: never limited.
		h.do(t, "POST", "/v1/agents/"+carolID+"/heartbeat", carolToken, `{"status":"active"}`).want(t, 200, nil)
	})
}

// TestReleaseDirectLease: a task's branch lease taken directly in the
// store has no lease workflow; an admin's release ends it in the store, at
// a raised version so the task's next renewal finds it lost, and nobody
// else's does.
func TestReleaseDirectLease(t *testing.T) {
	h := newHarness(t)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	l := ssot.MeshLease{LeaseID: "L-direct.1", ResourceKey: "repo:/src/app:feature/x", AgentID: "T-2026-001", State: lease.StateActive,
		TTLSeconds: 600, AcquiredAt: at, ExpiresAt: at.Add(10 * time.Minute), LastHeartbeat: at, Version: 1}
	if _, taken, err := h.store.TakeLease(context.Background(), l, nil, false); err != nil || !taken {
		t.Fatalf("taking the lease directly: %v %v", taken, err)
	}
	if a := h.do(t, "DELETE", "/v1/leases/L-direct.1", aliceToken, ""); a.status == http.StatusOK {
		t.Fatalf("an agent released a task's lease: %d %s", a.status, a.body)
	}
	if got, _ := h.store.Lease(context.Background(), "L-direct.1"); got.State != lease.StateActive {
		t.Fatalf("after an agent's refused release: %+v", got)
	}
	a := h.do(t, "DELETE", "/v1/leases/L-direct.1", adminToken, "")
	if a.status != http.StatusOK || !strings.Contains(string(a.body), `"state":"released"`) {
		t.Fatalf("admin release: %d %s", a.status, a.body)
	}
	got, err := h.store.Lease(context.Background(), "L-direct.1")
	if err != nil || got.State != lease.StateReleased || got.Reason != lease.ReasonAdmin || got.Version != 2 {
		t.Fatalf("stored lease %+v %v, want released by an admin at version 2", got, err)
	}
	// The holder's renewal at the version it knew changes nothing.
	renew := l
	renew.LastHeartbeat, renew.Version = at.Add(time.Minute), 2
	if ok, err := h.store.CompareLease(context.Background(), renew, 1, nil); ok || err != nil {
		t.Errorf("the task renewed a released lease: %v %v", ok, err)
	}
}
