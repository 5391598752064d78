package runner

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// TestDecodeACPRecorded replays Gemini CLI's ACP stream of the commit
// run (recorded by TestACPGeminiCommit with AMPFLOW_RECORD=1): the tool
// call comes from its permission request, its result from the update
// that completes it, the tokens from the prompt's _meta, and the result's
// text is the last message's.
func TestDecodeACPRecorded(t *testing.T) {
	raw, err := os.ReadFile("testdata/acp_gemini_commit.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := Decode(ACP, raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"session",
		"text:Writing and committing the file.",
		"tool_call:execute",
		"tool_result:execute:",
		"text:Done: hello.txt is committed.",
		"usage:in=220,out=25,usd=0.0000",
		"result:Done: hello.txt is committed.:in=0,out=0",
	}
	if got := summary(evs); !reflect.DeepEqual(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
}

// TestDecodeACPUpdates covers the session/update variants the recorded
// streams do not: plans, thoughts (not text), a tool call that fails, one
// whose input comes with the call, cumulative cost turned into each
// step's, an update in another currency, and turns that did not end by
// themselves.
func TestDecodeACPUpdates(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"read","priority":"high","status":"completed"},{"content":"edit","priority":"medium","status":"pending"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Edit a.go","kind":"edit","status":"pending","rawInput":{"file_path":"/w/a.go"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"no such file"}}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"failed"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.5,"currency":"USD"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":20,"size":100,"cost":{"amount":0.75,"currency":"USD"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":20,"size":100,"cost":{"amount":9,"currency":"EUR"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Out of "}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"tokens."}}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"max_tokens","usage":{"inputTokens":7,"outputTokens":3,"thoughtTokens":2,"cachedReadTokens":4,"totalTokens":12}}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"stopReason":"cancelled"}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"Authentication required"}}`,
	}
	evs, err := Decode(ACP, []byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"plan",
		"tool_call:edit:/w/a.go",
		"tool_result:edit:no such file:error",
		"usage:in=0,out=0,usd=0.5000",
		"usage:in=0,out=0,usd=0.2500",
		"text:Out of",
		"text:tokens.",
		"usage:in=7,out=5,usd=0.0000",
		"result:Out of tokens.:error:in=0,out=0",
		"result:the turn ended: cancelled:error:in=0,out=0",
		"error:ACP error -32000: Authentication required",
	}
	if got := summary(evs); !reflect.DeepEqual(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	if evs[0].Text != "[completed] read\n[pending] edit" {
		t.Errorf("plan text %q", evs[0].Text)
	}
	if evs[7].Usage.CachedTokens != 4 {
		t.Errorf("cached tokens %d, want 4", evs[7].Usage.CachedTokens)
	}
}

// TestSelectOption picks the one-time option of the answer's side, the
// lasting one only when it is all there is, and never another side's.
func TestSelectOption(t *testing.T) {
	opt := func(id string, k acp.PermissionOptionKind) acp.PermissionOption {
		return acp.PermissionOption{OptionId: acp.PermissionOptionId(id), Kind: k}
	}
	all := []acp.PermissionOption{opt("aa", acp.PermissionOptionKindAllowAlways), opt("a1", acp.PermissionOptionKindAllowOnce),
		opt("rr", acp.PermissionOptionKindRejectAlways), opt("r1", acp.PermissionOptionKindRejectOnce)}
	tests := []struct {
		name  string
		opts  []acp.PermissionOption
		allow bool
		want  string
		ok    bool
	}{
		{"AllowOnce", all, true, "a1", true},
		{"RejectOnce", all, false, "r1", true},
		{"AllowAlwaysOnly", all[:1], true, "aa", true},
		{"RejectAlwaysOnly", all[2:3], false, "rr", true},
		{"NoReject", all[:2], false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := selectOption(tt.opts, tt.allow)
			if string(id) != tt.want || ok != tt.ok {
				t.Errorf("selectOption = %q, %v; want %q, %v", id, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestGeminiSessionMinute reads the minute a Gemini CLI session began
// from its chat file's name, the latest when the session has several.
func TestGeminiSessionMinute(t *testing.T) {
	home := t.TempDir()
	chats := filepath.Join(home, ".gemini", "tmp", "project", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"session-2026-05-01T09-41-0a1b2c3d.jsonl", "session-2026-05-01T10-02-0a1b2c3d.jsonl", "session-2026-05-01T11-00-ffffffff.jsonl"} {
		if err := os.WriteFile(filepath.Join(chats, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, ok := geminiSessionMinute(home, "0a1b2c3d-1111-2222-3333-444455556666")
	if want := time.Date(2026, 5, 1, 10, 2, 0, 0, time.UTC); !ok || !got.Equal(want) {
		t.Errorf("minute %v %v, want %v", got, ok, want)
	}
	if _, ok := geminiSessionMinute(home, "99999999-0000"); ok {
		t.Error("a minute for a session with no chat file")
	}
}
