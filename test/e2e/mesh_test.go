package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/repomesh"
)

// TestMesh runs leases and agent messaging against `ampflow dev` with
// three agents' tokens: a lease not renewed is auto-released within a
// second of its TTL and its holder is told; two agents hold a threaded
// conversation with a mention and find it by search; an agent reporting
// recovered loses its leases, is echoed in the mesh and gets its
// in-progress task's dispatch again; a test failing three times is
// retried after 1 s and 2 s and then files a bug task awaiting approval.
func TestMesh(t *testing.T) {
	p := startDev(t, t.TempDir(),
		"AMPFLOW_AUTH_TOKENS=alice-secret-0123456789ab:executor:alice,bob-secret-0123456789ab:reviewer:bob,root-secret-0123456789ab:admin:root,coord-secret-0123456789ab:coordinator:planner,erin-secret-0123456789ab:executor:erin")
	alice := newAPIClient(t, p.api, "alice-secret-0123456789ab")
	bob := newAPIClient(t, p.api, "bob-secret-0123456789ab")

	t.Run("LeaseAutoReleasedOnTime", func(t *testing.T) {
		var l repomesh.Lease
		if code := alice.do("POST", "/v1/leases", map[string]any{"resource_key": "file:app:main", "agent_id": "alice", "ttl_seconds": 3}, &l); code != 201 {
			t.Fatalf("acquire: %d", code)
		}
		var conflict repomesh.ConflictBody
		code, body := bob.on(t).call("POST", "/v1/leases", []byte(`{"resource_key":"file:app:main","ttl_seconds":30}`), nil)
		if err := json.Unmarshal(body, &conflict); code != 409 || err != nil || conflict.Error.Holder != "alice" ||
			conflict.Error.Code != repomesh.CodeLockConflict || conflict.Error.RetryAfterMS <= 0 || conflict.Error.RetryAfterMS > 3000 {
			t.Fatalf("bob's acquire while alice holds: %d %s", code, body)
		}
		var renewed repomesh.Lease
		if code := alice.do("POST", "/v1/leases/"+l.LeaseID+"/heartbeat", map[string]any{"agent_id": "alice", "ttl": 3}, &renewed); code != 200 {
			t.Fatalf("heartbeat: %d", code)
		}
		// Not renewed again: the lease runs out at renewed.ExpiresAt.
		var ended repomesh.Lease
		eventually(t, 15*time.Second, "the lease auto-released", func() (bool, error) {
			var list repomesh.LeaseList
			alice.do("GET", "/v1/leases?agent_id=alice&limit=1", nil, &list)
			if len(list.Leases) == 1 && list.Leases[0].LeaseID == l.LeaseID && list.Leases[0].State == "expired" {
				ended = list.Leases[0]
				return true, nil
			}
			return false, fmt.Errorf("leases %+v", list.Leases)
		})
		late := ended.ReleasedAt.Sub(renewed.ExpiresAt)
		t.Logf("expired at %s, auto-released at %s (%s late)", renewed.ExpiresAt, ended.ReleasedAt, late)
		if late < 0 || late > time.Second {
			t.Fatalf("released %s after expiry, want within a second", late)
		}
		if !ended.LastHeartbeat.Equal(renewed.LastHeartbeat.Truncate(time.Microsecond)) || ended.Reason != "expired" {
			t.Fatalf("ended lease %+v", ended)
		}
		// The holder is told, and the release is a mesh event.
		var inbox repomesh.EventList
		eventually(t, 5*time.Second, "alice told of the auto-release", func() (bool, error) {
			alice.do("GET", "/v1/events/inbox?limit=10", nil, &inbox)
			types := map[string]bool{}
			for _, e := range inbox.Events {
				types[e.Type] = true
			}
			return types["agent.chat"] && types["lock.auto_released"], fmt.Errorf("alice's inbox %+v", inbox.Events)
		})
		for _, e := range inbox.Events {
			if e.Type == "lock.auto_released" && !strings.Contains(string(e.Payload), `"last_heartbeat"`) {
				t.Errorf("lock.auto_released without last_heartbeat: %s", e.Payload)
			}
		}
		if code := bob.do("POST", "/v1/leases", map[string]any{"resource_key": "file:app:main", "ttl_seconds": 30}, &l); code != 201 || l.AgentID != "bob" {
			t.Fatalf("bob's acquire after the release: %d %+v", code, l)
		}
		if code := alice.do("DELETE", "/v1/leases/"+l.LeaseID, nil, nil); code != 403 {
			t.Fatalf("alice releasing bob's lease: %d, want 403", code)
		}
		if code := bob.do("DELETE", "/v1/leases/"+l.LeaseID, nil, &l); code != 200 || l.State != "released" {
			t.Fatalf("bob's release: %d %+v", code, l)
		}
	})

	t.Run("TakenAgainAtOnce", func(t *testing.T) {
		// A run ends with its release; an acquire meeting it as it ends
		// starts the next run.
		for i := range 5 {
			var a, b repomesh.Lease
			if code := alice.do("POST", "/v1/leases", map[string]any{"resource_key": "k:again", "ttl_seconds": 30}, &a); code != 201 {
				t.Fatalf("round %d: alice's acquire: %d", i, code)
			}
			done := make(chan int)
			go func() {
				done <- bob.do("POST", "/v1/leases", map[string]any{"resource_key": "k:again", "ttl_seconds": 30}, &b)
			}()
			alice.do("DELETE", "/v1/leases/"+a.LeaseID, nil, nil)
			switch code := <-done; code {
			case 201:
				bob.do("DELETE", "/v1/leases/"+b.LeaseID, nil, nil)
			case 409:
			default:
				t.Fatalf("round %d: bob's acquire as alice releases: %d", i, code)
			}
		}
	})

	t.Run("LeaseCLI", func(t *testing.T) {
		env := cliEnv(p, "bob-secret-0123456789ab", "bob")
		var l repomesh.Lease
		if err := json.Unmarshal([]byte(mustRun(t, env, "-o", "json", "lease", "acquire", "file:cli:main", "--ttl", "120")), &l); err != nil || l.AgentID != "bob" || l.State != "active" {
			t.Fatalf("lease acquire: %+v %v", l, err)
		}
		_, errOut, code := runAmpflow(t, cliEnv(p, "alice-secret-0123456789ab", "alice"), nil, "lease", "acquire", "file:cli:main")
		if code == 0 || !strings.Contains(errOut, "held by bob") {
			t.Fatalf("alice's lease acquire of bob's key: exit %d %s", code, errOut)
		}
		mustRun(t, env, "lease", "renew", l.LeaseID, "--ttl", "60")
		if out := mustRun(t, env, "lease", "list", "--agent", "bob", "--state", "active"); !strings.Contains(out, l.LeaseID) || !strings.Contains(out, "60s") {
			t.Fatalf("lease list:\n%s", out)
		}
		mustRun(t, env, "lease", "release", l.LeaseID)
		var list []repomesh.Lease // -o json: the API's leases, one array
		if err := json.Unmarshal([]byte(mustRun(t, env, "-o", "json", "lease", "list", "--agent", "bob", "--state", "released")), &list); err != nil || len(list) == 0 || list[0].LeaseID != l.LeaseID {
			t.Fatalf("released leases: %+v %v", list, err)
		}
	})

	t.Run("ThreadedConversation", func(t *testing.T) {
		env := cliEnv(p, "alice-secret-0123456789ab", "alice")
		rootID := lastLine(mustRun(t, env, "chat", "send", "bob", "Can you review src/auth.py before the release?", "--subject", "Code review request"))
		var root repomesh.Event
		if code := bob.do("GET", "/v1/events/inbox?limit=5", nil, &repomesh.EventList{}); code != 200 {
			t.Fatalf("bob's inbox: %d", code)
		}
		if code := bob.do("GET", "/v1/events/"+rootID, nil, &root); code != 200 || root.ThreadID != rootID {
			t.Fatalf("the request %s: %d %+v", rootID, code, root)
		}
		reply := map[string]any{"type": "agent.chat", "severity": "info", "payload": map[string]any{
			"from": "bob", "from_id": "bob", "to": "alice", "subject": "Re: Code review request",
			"content":           "Found a SQL injection in login; @alice please fix, and @carol should rerun the suite.",
			"parent_message_id": rootID, "timestamp": time.Now().UTC().Format(time.RFC3339)}}
		var r repomesh.Event
		if code := bob.do("POST", "/v1/events", reply, &r); code != 201 || r.ThreadID != rootID {
			t.Fatalf("bob's reply: %d %+v", code, r)
		}
		var carol repomesh.EventList
		root2 := alice.on(t).as("root-secret-0123456789ab")
		root2.do("GET", "/v1/events/inbox?recipient_id=carol", nil, &carol)
		if len(carol.Events) != 1 || carol.Events[0].ID != r.ID {
			t.Fatalf("carol's inbox (mentioned): %+v", carol.Events)
		}
		mustRun(t, env, "chat", "send", "bob", "Fixed in a1b2c3, thanks", "--reply-to", r.ID)
		var thread repomesh.EventList
		alice.do("GET", "/v1/events/"+r.ID+"/thread", nil, &thread)
		if len(thread.Events) != 3 || thread.Events[0].ID != rootID || thread.Events[1].ID != r.ID {
			t.Fatalf("thread %+v", thread.Events)
		}
		var found repomesh.EventList
		alice.do("GET", "/v1/events/search?q="+url.QueryEscape("sql injection")+"&from=bob", nil, &found)
		if len(found.Events) != 1 || found.Events[0].ID != r.ID {
			t.Fatalf("search: %+v", found.Events)
		}
		out := mustRun(t, env, "-o", "json", "chat", "search", "review", "--to", "bob")
		if !strings.Contains(out, rootID) {
			t.Fatalf("chat search review --to bob:\n%s", out)
		}
		var read repomesh.Event
		if code := alice.do("POST", "/v1/events/"+r.ID+"/read", map[string]any{}, &read); code != 200 || len(read.ReadBy) != 1 || read.ReadBy[0].AgentID != "alice" {
			t.Fatalf("read receipt: %d %+v", code, read.ReadBy)
		}
		// An invalid message: 400 naming the fields, and an agent.error to the sender.
		code, body := bob.on(t).call("POST", "/v1/events", []byte(`{"type":"agent.chat","severity":"info","payload":{"from":"bob","to":"alice"}}`), nil)
		if code != 400 || !strings.Contains(string(body), "payload.subject") || !strings.Contains(string(body), "INVALID_PAYLOAD") {
			t.Fatalf("invalid chat: %d %s", code, body)
		}
		var errs repomesh.EventList
		bob.do("GET", "/v1/events/search?type=agent.error&to=bob", nil, &errs)
		if len(errs.Events) == 0 || !strings.Contains(string(errs.Events[0].Payload), `"error_code":"INVALID_PAYLOAD"`) {
			t.Fatalf("bob's agent.error: %+v", errs.Events)
		}
	})

	t.Run("AgentRecovered", func(t *testing.T) {
		// erin, not alice: an agent reports a restart once a minute, and
		// alice reports hers below.
		erin := alice.on(t).as("erin-secret-0123456789ab")
		for _, key := range []string{"claim:T-2026-900", "file:app:feature"} {
			if code := erin.do("POST", "/v1/leases", map[string]any{"resource_key": key, "ttl_seconds": 600}, nil); code != 201 {
				t.Fatalf("acquire %s: %d", key, code)
			}
		}
		eventually(t, 5*time.Second, "erin's two leases recorded", func() (bool, error) {
			var list repomesh.LeaseList
			erin.do("GET", "/v1/leases?agent_id=erin&state=active", nil, &list)
			return len(list.Leases) == 2, fmt.Errorf("%+v", list.Leases)
		})
		var hb repomesh.AgentHeartbeatResponse
		if code := erin.do("POST", "/v1/agents/erin/heartbeat", map[string]any{"status": "recovered"}, &hb); code != 200 || len(hb.Released) != 2 {
			t.Fatalf("recovered: %d %+v", code, hb)
		}
		var list repomesh.LeaseList
		erin.do("GET", "/v1/leases?agent_id=erin&state=active", nil, &list)
		if len(list.Leases) != 0 {
			t.Fatalf("active leases after recovery: %+v", list.Leases)
		}
		var echo repomesh.EventList
		bob.do("GET", "/v1/events/search?from=erin&q=recovered", nil, &echo)
		if len(echo.Events) != 1 || echo.Events[0].ID != hb.EventID {
			t.Fatalf("recovery echo: %+v", echo.Events)
		}
		// Another agent may take them now.
		if code := bob.do("POST", "/v1/leases", map[string]any{"resource_key": "claim:T-2026-900", "ttl_seconds": 5}, nil); code != 201 {
			t.Fatalf("bob's acquire after erin recovered: %d", code)
		}
	})

	t.Run("TwoTasksOneBranch", func(t *testing.T) { twoTasksOneBranch(t, p, alice, bob) })

	t.Run("TasksRedispatchedAndBugTask", func(t *testing.T) {
		coord := alice.on(t).as("coord-secret-0123456789ab")
		var started struct {
			TaskID string `json:"task_id"`
		}
		if code := coord.do("POST", "/v1/tasks", map[string]any{"plan": lowRiskPlan(gitRepo(t))}, &started); code >= 300 {
			t.Fatalf("task start: %d", code)
		}
		id := started.TaskID
		d := alice.inbox(amp.RoleExecutor, id, amp.TypeTaskDispatch)
		if code := alice.do("POST", "/v1/acks", map[string]string{"msg_id": d.MsgID, "as": "executor"}, nil); code >= 300 {
			t.Fatalf("ACK: %d", code)
		}
		eventually(t, 30*time.Second, id+" in progress", func() (bool, error) {
			var st task.State
			alice.do("GET", "/v1/tasks/"+id, nil, &st)
			return st.Underlying() == task.StatusInProgress, fmt.Errorf("status %s", st.Status)
		})
		// The executor crashed and lost its work: it says so, and the
		// task sends the dispatch again at once.
		var hb repomesh.AgentHeartbeatResponse
		if code := alice.do("POST", "/v1/agents/alice/heartbeat", map[string]any{"status": "recovered"}, &hb); code != 200 || !slices.Contains(hb.Redispatched, id) {
			t.Fatalf("recovered: %d %+v", code, hb)
		}
		again := alice.inbox(amp.RoleExecutor, id, amp.TypeTaskDispatch)
		if again.MsgID == d.MsgID {
			t.Fatalf("the dispatch was not sent again: %s", again.MsgID)
		}
		var st task.State
		alice.do("GET", "/v1/tasks/"+id, nil, &st)
		if st.Pending != nil {
			t.Fatalf("a decision was raised on recovery: %+v", st.Pending)
		}
		// A test failing three times: retries after 1s and 2s, then a
		// bug task whose plan waits for an admin.
		for i := 1; i <= 3; i++ {
			res := map[string]any{"type": "test.result", "severity": "info", "payload": map[string]any{
				"task_id": id, "suite_name": "e2e/auth", "passed": 15, "failed": 1, "skipped": 0, "duration_ms": 4521,
				"failures": []map[string]string{{"test": "login_with_invalid_credentials", "error": "timeout", "message": "Expected 401, got timeout after 30s"}}}}
			if code := alice.do("POST", "/v1/events", res, nil); code != 201 {
				t.Fatalf("test.result %d: %d", i, code)
			}
		}
		var retries repomesh.EventList
		alice.do("GET", "/v1/events/inbox?direction=asc&limit=500", nil, &retries)
		var waits []any
		bug := ""
		for _, e := range retries.Events {
			if e.Type != repomesh.TypeTestRetry {
				continue
			}
			var p struct {
				RetryAfterMS int64             `json:"retry_after_ms"`
				Bugs         map[string]string `json:"bug_tasks"`
			}
			json.Unmarshal(e.Payload, &p)
			waits = append(waits, p.RetryAfterMS)
			if b := p.Bugs["login_with_invalid_credentials"]; b != "" {
				bug = b
			}
		}
		if fmt.Sprint(waits) != "[1000 2000 4000]" || bug == "" {
			t.Fatalf("test.retry back-offs %v, bug task %q", waits, bug)
		}
		eventually(t, 30*time.Second, "bug task "+bug+" awaiting approval", func() (bool, error) {
			var st task.State
			alice.do("GET", "/v1/tasks/"+bug, nil, &st)
			return st.Status == task.StatusAwaitingApproval && st.Pending != nil && strings.HasPrefix(st.Description, "Fix flaky test: login_with_invalid_credentials"),
				fmt.Errorf("status %s, description %q", st.Status, st.Description)
		})

		// The task speaks in the mesh: created, and claimed by the ACK.
		// They go to no inbox, and every agent finds them by search.
		admin := alice.on(t).as("root-secret-0123456789ab")
		for _, typ := range []string{"task.created", "task.claimed"} {
			for _, who := range []*apiClient{admin, bob} {
				var found repomesh.EventList
				who.do("GET", "/v1/events/search?type="+typ+"&task_id="+id, nil, &found)
				if len(found.Events) != 1 {
					t.Errorf("%s events of %s found with token %s: %+v", typ, id, who.token, found.Events)
				}
			}
		}
	})

	// A mesh event id is its sender's: another agent posting the same id
	// is refused and reads nothing of the first one's message.
	t.Run("EventIDIsTheSenders", func(t *testing.T) {
		erin := newAPIClient(t, p.api, "erin-secret-0123456789ab")
		chat := func(from, content string) string {
			return fmt.Sprintf(`{"id":"private-note-1","type":"agent.chat","severity":"info","payload":{"from":%q,"from_id":%q,"to":"bob",`+
				`"subject":"private","content":%q,"timestamp":"2026-11-23T21:20:00Z"}}`, from, from, content)
		}
		if code, body := alice.on(t).call("POST", "/v1/events", []byte(chat("alice", "the deploy key is in vault/alice")), nil); code != 201 {
			t.Fatalf("alice's post: %d %s", code, body)
		}
		code, body := erin.call("POST", "/v1/events", []byte(chat("erin", "hello")), nil)
		if code != 409 || strings.Contains(string(body), "vault/alice") {
			t.Fatalf("erin posting alice's id: %d %s; want 409 and nothing of alice's", code, body)
		}
		if code, body := alice.on(t).call("POST", "/v1/events", []byte(chat("alice", "the deploy key is in vault/alice")), nil); code != 200 && code != 201 {
			t.Errorf("alice's retry: %d %s; want her stored event", code, body)
		}
	})
}

func cliEnv(p *devProc, token, name string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMPFLOW_") {
			env = append(env, kv)
		}
	}
	return append(env, "AMPFLOW_API_URL=http://"+p.api, "AMPFLOW_API_TOKEN="+token, "AMPFLOW_AGENT_NAME="+name)
}

func mustRun(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errOut, code := runAmpflow(t, env, nil, args...)
	if code != 0 {
		t.Fatalf("ampflow %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}
