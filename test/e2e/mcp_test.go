package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampflow/ampflow/integrations/mcp"
)

// bearerTransport sends every MCP request with an API token.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCP speaks MCP to `ampflow dev` with the Go SDK's client, as an
// agent's CLI would: one session per agent lists the tools, alice sends
// bob a chat message (as herself, whatever she claims), and bob finds it
// in his mesh inbox.
func TestMCP(t *testing.T) {
	p := startDev(t, t.TempDir(), "AMPFLOW_AUTH_TOKENS=alice-secret-0123456789ab:executor:alice,bob-secret-0123456789ab:reviewer:bob")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(token string) *sdk.ClientSession {
		tr := &sdk.StreamableClientTransport{Endpoint: "http://" + p.api + mcp.Path, DisableStandaloneSSE: true, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearerTransport{token}}}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatalf("initialize: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := connect("alice-secret-0123456789ab"), connect("bob-secret-0123456789ab")

	tools, err := alice.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"inbox", "send", "chat_send", "chat_inbox", "lease_acquire", "signal", "request_approval", "decide", "execute"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list has no %s: %v", want, names)
		}
	}

	call := func(cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil || res.IsError {
			t.Fatalf("%s: %s", name, text)
		}
		return out
	}
	sent := call(alice, "chat_send", map[string]any{"to": "bob", "subject": "review", "content": "Can you review the MCP docs?", "from": "bob"})
	if pl, _ := sent["payload"].(map[string]any); pl["from"] != "alice" {
		t.Errorf("sent as %v, want alice", sent["payload"])
	}
	inbox := call(bob, "chat_inbox", map[string]any{"direction": "asc"})
	var found bool
	events, _ := inbox["events"].([]any)
	for _, e := range events {
		if e.(map[string]any)["id"] == sent["id"] {
			found = true
		}
	}
	if !found {
		t.Errorf("bob's inbox lacks %v: %v", sent["id"], inbox)
	}
}
