package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampflow/ampflow/activities/lease/leasetest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
	"github.com/ampflow/ampflow/integrations/mcp"
	"github.com/ampflow/ampflow/integrations/repomesh"
	"github.com/ampflow/ampflow/integrations/transcripts"
	"github.com/ampflow/ampflow/workflows"
)

// The test wires the mesh's routes beside /mcp as the workers do: the
// MCP package itself imports no system; only this test of it does.

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789ab"
)

// fakeTasks takes the messages sent to tasks.
type fakeTasks struct {
	workflows.Tasks
	mu        sync.Mutex
	submitted [][]byte
}

func (f *fakeTasks) Submit(_ context.Context, raw []byte) (task.SubmitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submitted = append(f.submitted, raw)
	return task.SubmitResult{Status: task.StatusInProgress}, nil
}

func (f *fakeTasks) Heartbeat(context.Context, string, task.HeartbeatInput) error { return nil }

func (f *fakeTasks) StartNext(context.Context, task.Input, int) (string, error) {
	return "T-2026-001", nil
}

type harness struct {
	url   string
	tasks *fakeTasks
	store *ssot.DB
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	store, _ := httpapitest.Store(t)
	ft := &fakeTasks{}
	api := httpapi.New(httpapi.Options{Tasks: ft, Store: store, Tokens: []config.AuthToken{
		{Token: aliceToken, Role: amp.RoleExecutor, Name: "alice"},
		{Token: bobToken, Role: amp.RoleReviewer, Name: "bob"},
	}, MaxWait: 2 * time.Second, PollInterval: 20 * time.Millisecond})
	repomesh.Register(api, repomesh.Options{Leases: leasetest.New(), Store: store, Tasks: ft})
	transcripts.Register(api, transcripts.Options{Store: store})
	mcp.Register(api, mcp.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	return &harness{url: httpapitest.Serve(t, api) + mcp.Path, tasks: ft, store: store}
}

// bearer adds a token to every request of the MCP client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// session connects an MCP client (initialize) as the token's agent.
func (h *harness) session(t *testing.T, token string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: h.url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
		DisableStandaloneSSE: true, MaxRetries: -1}
	cs, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connecting as %s: %v", token, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its structured result and whether it is
// an error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	text := res.Content[0].(*sdk.TextContent).Text
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: the result's text is not the API's JSON: %v: %s", name, err, text)
	}
	return out, res.IsError
}

// code is an API error's code.
func code(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func TestToolsList(t *testing.T) {
	h := newHarness(t)
	cs := h.session(t, aliceToken)
	if got := cs.InitializeResult().ServerInfo.Name; got != "ampflow" {
		t.Errorf("server name %q", got)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	for _, tl := range res.Tools {
		raw, _ := json.Marshal(tl.InputSchema)
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		schemas[tl.Name] = s
	}
	for _, name := range []string{"inbox", "ack", "send", "heartbeat", "lease_acquire", "lease_renew", "lease_release", "leases",
		"chat_send", "chat_inbox", "chat_thread", "chat_search", "task_transcript"} {
		if schemas[name] == nil {
			t.Errorf("no tool %s", name)
		}
	}
	// This API serves no gate and no contracts: their tools are left
	// out (workers' TestMCPTools lists them on the whole API).
	for _, name := range []string{"signal", "request_approval", "decide", "execute"} {
		if schemas[name] != nil {
			t.Errorf("tool %s without its route", name)
		}
	}
	props := func(tool string) map[string]any { p, _ := schemas[tool]["properties"].(map[string]any); return p }
	for tool, want := range map[string][]string{
		"inbox": {"role", "wait", "limit", "cursor"}, "send": {"type", "task_id", "payload"},
		"lease_acquire": {"resource_key", "ttl_seconds"}, "lease_release": {"lease_id"},
		"chat_send": {"to", "subject", "content"}, "chat_thread": {"event_id"},
	} {
		for _, p := range want {
			if props(tool)[p] == nil {
				t.Errorf("%s's input has no property %s: %v", tool, p, props(tool))
			}
		}
	}
	if props("chat_send")["from"] != nil {
		t.Error("chat_send takes a sender")
	}
	// The API's schemas, references and all: send's payload is AMP's.
	raw, _ := json.Marshal(schemas["send"])
	if !strings.Contains(string(raw), `"$ref":"#/$defs/amp_task_result/$defs/payload"`) || !strings.Contains(string(raw), "completion_status") {
		t.Errorf("send's schema does not carry the AMP payloads: %.300s", raw)
	}
}

func TestToolsActAsTheToken(t *testing.T) {
	h := newHarness(t)
	alice, bob := h.session(t, aliceToken), h.session(t, bobToken)

	t.Run("Inbox", func(t *testing.T) {
		out, isErr := call(t, alice, "inbox", map[string]any{"wait": "0s"})
		if isErr || out["role"] != "executor" {
			t.Errorf("alice's inbox: %v", out)
		}
		out, isErr = call(t, bob, "inbox", map[string]any{})
		if isErr || out["role"] != "reviewer" {
			t.Errorf("bob's inbox: %v", out)
		}
	})

	t.Run("Send", func(t *testing.T) {
		result := map[string]any{"type": "task_result", "task_id": "T-2026-001", "payload": map[string]any{
			"subtask_id": "S1", "completion_status": "complete",
			"diff_summary":    map[string]any{"files_changed": []any{"a.go"}, "lines_added": 1, "lines_removed": 0},
			"self_assessment": map[string]any{"criteria_met": []any{true}, "notes": []any{}}, "work_log": []any{}}}
		out, isErr := call(t, alice, "send", result)
		if isErr {
			t.Fatalf("alice's task_result: %v", out)
		}
		h.tasks.mu.Lock()
		got := string(h.tasks.submitted[len(h.tasks.submitted)-1])
		h.tasks.mu.Unlock()
		if !strings.Contains(got, `"from":"executor"`) {
			t.Errorf("the task got %s", got)
		}
		out, isErr = call(t, bob, "send", result)
		if !isErr || code(out) != "forbidden" {
			t.Errorf("bob sends a task_result: %v", out)
		}
	})

	t.Run("Chat", func(t *testing.T) {
		out, isErr := call(t, alice, "chat_send", map[string]any{"to": "bob", "subject": "review", "content": "please @bob",
			"from": "bob", "from_id": "bob"})
		if isErr {
			t.Fatalf("chat_send: %v", out)
		}
		if p, _ := out["payload"].(map[string]any); p["from"] != "alice" || p["from_id"] != "alice" {
			t.Errorf("the message is not from alice: %v", out)
		}
		id, _ := out["id"].(string)
		out, isErr = call(t, bob, "chat_inbox", map[string]any{})
		if isErr || !strings.Contains(fmt.Sprint(out["events"]), id) {
			t.Errorf("bob's inbox lacks %s: %v", id, out)
		}
		out, isErr = call(t, alice, "chat_inbox", map[string]any{"recipient_id": "bob"})
		if !isErr || code(out) != "PERMISSION_DENIED" {
			t.Errorf("alice reads bob's inbox: %v", out)
		}
		out, isErr = call(t, bob, "chat_thread", map[string]any{"event_id": id})
		if isErr {
			t.Errorf("bob reads the thread: %v", out)
		}
	})

	t.Run("Leases", func(t *testing.T) {
		out, isErr := call(t, alice, "lease_acquire", map[string]any{"resource_key": "file:README.md", "ttl_seconds": 60})
		id, _ := out["lease_id"].(string)
		if isErr || out["agent_id"] != "alice" || id == "" {
			t.Fatalf("alice's lease: %v", out)
		}
		out, isErr = call(t, bob, "lease_acquire", map[string]any{"resource_key": "file:README.md", "ttl_seconds": 60, "agent_id": "alice"})
		if !isErr || code(out) != "PERMISSION_DENIED" {
			t.Errorf("bob takes a lease as alice: %v", out)
		}
		out, isErr = call(t, bob, "lease_acquire", map[string]any{"resource_key": "file:README.md", "ttl_seconds": 60})
		if !isErr || code(out) != "LOCK_CONFLICT" {
			t.Errorf("bob takes alice's key: %v", out)
		}
		// The renewal is refused before the holder is asked here: the
		// fake leases are not in the SSOT the route reads first.
		if out, isErr = call(t, bob, "lease_renew", map[string]any{"lease_id": id}); !isErr {
			t.Errorf("bob renews alice's lease: %v", out)
		}
		out, isErr = call(t, bob, "lease_release", map[string]any{"lease_id": id})
		if !isErr || code(out) != "PERMISSION_DENIED" {
			t.Errorf("bob releases alice's lease: %v", out)
		}
		out, isErr = call(t, alice, "lease_release", map[string]any{"lease_id": id})
		if isErr || out["state"] != string(lease.StateReleased) {
			t.Errorf("alice's release: %v", out)
		}
	})

	t.Run("MissingPathArgument", func(t *testing.T) {
		out, isErr := call(t, alice, "lease_release", map[string]any{})
		if !isErr || code(out) != "invalid" {
			t.Errorf("release without lease_id: %v", out)
		}
	})
}

func TestTransportRefusals(t *testing.T) {
	h := newHarness(t)
	post := func(token, accept string) *http.Response {
		req, _ := http.NewRequest("POST", h.url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for name, c := range map[string]struct {
		token, accept string
		want          int
	}{
		"NoToken":    {"", "application/json, text/event-stream", http.StatusUnauthorized},
		"WrongToken": {"nope-0123456789abcdef", "application/json, text/event-stream", http.StatusUnauthorized},
		"Accepted":   {aliceToken, "application/json, text/event-stream", http.StatusOK},
	} {
		if got := post(c.token, c.accept).StatusCode; got != c.want {
			t.Errorf("%s: status %d, want %d", name, got, c.want)
		}
	}
	req, _ := http.NewRequest("GET", h.url, nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || !slices.Contains(strings.Split(resp.Header.Get("Allow"), ", "), "POST") {
		t.Errorf("GET /mcp: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestTaskTranscript reads a run's transcript through its tool, which
// takes no follow.
func TestTaskTranscript(t *testing.T) {
	h := newHarness(t)
	three := 3
	if _, err := h.store.AppendTranscript(context.Background(), "T-2026-001", []ssot.TranscriptEntry{
		{Role: "executor", Run: 1, Kind: ssot.TranscriptToolResult, Tool: "Bash", Text: "boom", IsError: true, ExitCode: &three}}); err != nil {
		t.Fatal(err)
	}
	cs := h.session(t, aliceToken)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "task_transcript" && strings.Contains(fmt.Sprint(tl.InputSchema), "follow") {
			t.Errorf("task_transcript takes follow: %v", tl.InputSchema)
		}
	}
	out, isErr := call(t, cs, "task_transcript", map[string]any{"task_id": "T-2026-001"})
	es, _ := out["entries"].([]any)
	if isErr || len(es) != 1 || es[0].(map[string]any)["exit_code"] != float64(3) {
		t.Fatalf("task_transcript = %v (error %v)", out, isErr)
	}
}
