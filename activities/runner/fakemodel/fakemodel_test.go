package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sse reads a stream's data payloads, with their event names when given.
func sse(t *testing.T, r io.Reader) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(r)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			payload := strings.TrimPrefix(line, "data: ")
			names = append(names, name)
			name = ""
			if payload == "[DONE]" {
				data = append(data, map[string]any{"done": true})
				continue
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(payload), &v); err != nil {
				t.Fatalf("data %q: %v", payload, err)
			}
			data = append(data, v)
		}
	}
	return names, data
}

const tools = `"tools":[{"name":"Bash"}]`

var toolTurn = Turn{Text: "hi", Tool: &ToolCall{Name: "shell", Input: map[string]string{"command": "ls"}}}

func TestAnthropic(t *testing.T) {
	s := New(toolTurn)
	defer s.Close()
	resp := post(t, context.Background(), s.URL()+"/v1/messages?beta=true", `{"model":"claude-x","stream":true,`+tools+`}`)
	defer resp.Body.Close()
	names, data := sse(t, resp.Body)
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events %s\nwant   %s", got, want)
	}
	if d := data[6]["delta"].(map[string]any); d["partial_json"] != `{"command":"ls"}` {
		t.Errorf("tool input delta %v", d)
	}
	if d := data[8]["delta"].(map[string]any); d["stop_reason"] != "tool_use" {
		t.Errorf("stop reason %v", d)
	}
	// A side request (no tools) gets the side reply and leaves the script.
	resp = post(t, context.Background(), s.URL()+"/v1/messages", `{"model":"claude-x"}`)
	var msg struct {
		Content []struct{ Text string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if len(msg.Content) != 1 || msg.Content[0].Text != SideReply {
		t.Errorf("side reply %+v", msg)
	}
	if s.Served() != 1 || len(s.Requests()) != 2 || len(s.AgentRequests()) != 1 {
		t.Errorf("served %d, requests %d", s.Served(), len(s.Requests()))
	}
}

// TestAnthropicTwoTools: a turn with more tool calls streams them as
// blocks of one message, each with its own id and input.
func TestAnthropicTwoTools(t *testing.T) {
	two := Turn{Text: "hi", Tool: &ToolCall{Name: "Bash", Input: map[string]string{"command": "ls"}},
		More: []*ToolCall{{Name: "Bash", Input: map[string]string{"command": "pwd"}}}}
	s := New(two, two)
	defer s.Close()
	resp := post(t, context.Background(), s.URL()+"/v1/messages", `{"model":"claude-x","stream":true,`+tools+`}`)
	defer resp.Body.Close()
	_, data := sse(t, resp.Body)
	var ids, args []any
	for _, d := range data {
		if b, ok := d["content_block"].(map[string]any); ok && b["type"] == "tool_use" {
			ids = append(ids, b["id"])
		}
		if b, ok := d["delta"].(map[string]any); ok && b["type"] == "input_json_delta" {
			args = append(args, b["partial_json"])
		}
	}
	if len(ids) != 2 || ids[0] == ids[1] || len(args) != 2 || args[0] != `{"command":"ls"}` || args[1] != `{"command":"pwd"}` {
		t.Errorf("tool blocks %v, inputs %v", ids, args)
	}
	resp = post(t, context.Background(), s.URL()+"/v1/messages", `{"model":"claude-x",`+tools+`}`)
	var msg struct {
		Content []map[string]any
	}
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if len(msg.Content) != 3 || msg.Content[2]["input"].(map[string]any)["command"] != "pwd" || msg.Content[2]["args"] != nil {
		t.Errorf("whole reply %v", msg.Content)
	}
}

func TestResponses(t *testing.T) {
	s := New(toolTurn)
	defer s.Close()
	resp := post(t, context.Background(), s.URL()+"/v1/responses", `{"model":"gpt-x","stream":true,"input":[{"type":"additional_tools","tools":[]}]}`)
	defer resp.Body.Close()
	names, data := sse(t, resp.Body)
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Errorf("events %v", names)
	}
	if !strings.Contains(strings.Join(names, " "), "response.function_call_arguments.done") {
		t.Errorf("no function call in %v", names)
	}
	usage := data[len(data)-1]["response"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"].(float64) != 100 {
		t.Errorf("usage %v", usage)
	}
	for i, d := range data {
		if d["sequence_number"].(float64) != float64(i) {
			t.Errorf("event %d has sequence_number %v", i, d["sequence_number"])
		}
	}
}

func TestGemini(t *testing.T) {
	s := New(toolTurn)
	defer s.Close()
	resp := post(t, context.Background(), s.URL()+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
		`{"contents":[],"tools":[{"functionDeclarations":[{"name":"shell"}]}]}`)
	defer resp.Body.Close()
	_, data := sse(t, resp.Body)
	if len(data) != 2 {
		t.Fatalf("%d chunks", len(data))
	}
	last := data[1]["candidates"].([]any)[0].(map[string]any)
	part := last["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)
	if part["functionCall"].(map[string]any)["name"] != "shell" || last["finishReason"] != "STOP" {
		t.Errorf("last chunk %v", last)
	}
	if data[1]["usageMetadata"] == nil || data[1]["modelVersion"] != "gemini-x" {
		t.Errorf("last chunk %v", data[1])
	}
}

func TestChat(t *testing.T) {
	s := New(toolTurn)
	defer s.Close()
	resp := post(t, context.Background(), s.URL()+"/v1/chat/completions", `{"model":"m","stream":true,"tools":[{"type":"function"}]}`)
	defer resp.Body.Close()
	_, data := sse(t, resp.Body)
	if data[len(data)-1]["done"] != true {
		t.Error("no [DONE]")
	}
	fin := data[len(data)-3]["choices"].([]any)[0].(map[string]any)
	if fin["finish_reason"] != "tool_calls" {
		t.Errorf("finish %v", fin)
	}
	if data[len(data)-2]["usage"] == nil {
		t.Error("no usage chunk")
	}
}

func TestExhaustedStatusAndText(t *testing.T) {
	s := New(Turn{Status: 429, Body: `{"error":"slow down"}`, Header: http.Header{"Retry-After": {"7"}}})
	defer s.Close()
	resp := post(t, context.Background(), s.URL()+"/v1/messages", `{"model":"m",`+tools+`}`)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("status %d, header %v", resp.StatusCode, resp.Header)
	}
	resp = post(t, context.Background(), s.URL()+"/v1/messages", `{"model":"m",`+tools+`,"messages":[{"content":"tool said \"COMMITTED\""}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), Exhausted) {
		t.Errorf("after the script: %s", b)
	}
	reqs := s.Requests()
	if !reqs[1].Text(`tool said "COMMITTED"`) || reqs[1].Turn != -1 {
		t.Errorf("request %+v", reqs[1])
	}
}

// A turn For a text goes to the first agent request that has it; one
// before it gets a side reply.
func TestTurnFor(t *testing.T) {
	s := New(Turn{Text: "for T-2", For: "T-2"})
	defer s.Close()
	for _, task := range []string{"T-1", "T-2"} {
		resp := post(t, context.Background(), s.URL()+"/v1/chat/completions", `{"model":"m","tools":[{"type":"function"}],"messages":[{"role":"user","content":"`+task+`"}]}`)
		resp.Body.Close()
	}
	if reqs := s.Requests(); len(reqs) != 2 || reqs[0].Turn != -1 || reqs[1].Turn != 0 {
		t.Errorf("requests %+v, want T-1's a side one and T-2's the turn", reqs)
	}
}

// A hanging turn sends headers and nothing else, until Close releases it.
func TestHang(t *testing.T) {
	s := New(Turn{Hang: true})
	changed := s.Changed()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := post(t, ctx, s.URL()+"/v1/messages", `{"model":"m","stream":true,`+tools+`}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the request was not recorded")
	}
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		read <- err
	}()
	s.Close()
	select {
	case <-read:
	case <-ctx.Done():
		t.Fatal("Close did not release the hanging response")
	}
}

// A client's retry of an agent request (same path and body) gets the turn
// the request got, and the script goes on where it was; a retry after an
// error status gets the next turn.
func TestRetryGetsTheSameTurn(t *testing.T) {
	s := New(Turn{Text: "first"}, Turn{Status: 429, Body: `{"error":"slow down"}`}, Turn{Text: "third"})
	defer s.Close()
	ask := func(body string) string {
		t.Helper()
		resp := post(t, context.Background(), s.URL()+"/v1/messages", body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	one := `{"model":"m",` + tools + `,"messages":[{"content":"one"}]}`
	two := `{"model":"m",` + tools + `,"messages":[{"content":"two"}]}`
	if got := ask(one); !strings.Contains(got, "first") {
		t.Fatalf("first request: %s", got)
	}
	if got := ask(one); !strings.Contains(got, "first") {
		t.Errorf("the retry got %s, want the first turn again", got)
	}
	if got := ask(two); !strings.Contains(got, "slow down") {
		t.Errorf("the next request got %s, want the 429", got)
	}
	if got := ask(two); !strings.Contains(got, "third") {
		t.Errorf("the retry after a 429 got %s, want the third turn", got)
	}
	reqs := s.Requests()
	if len(reqs) != 4 || reqs[1].Turn != 0 || !reqs[1].Retry || reqs[3].Retry || s.Served() != 3 {
		t.Errorf("requests %+v, served %d", reqs, s.Served())
	}
	if n := len(s.AgentRequests()); n != 3 {
		t.Errorf("%d agent requests, want 3 (the retry is not one)", n)
	}
}

// Turns For two runs interleave in one script: each run's requests take
// its own turns in order, whichever run asks first.
func TestTurnsForTwoRuns(t *testing.T) {
	s := New(Turn{Text: "A1", For: "run-a"}, Turn{Text: "A2", For: "run-a"}, Turn{Text: "B1", For: "run-b"})
	defer s.Close()
	ask := func(run, n string) string {
		t.Helper()
		resp := post(t, context.Background(), s.URL()+"/v1/chat/completions", `{"model":"m","tools":[{"type":"function"}],"messages":[{"role":"user","content":"`+run+` `+n+`"}]}`)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, c := range []struct{ run, n, want string }{
		{"run-b", "1", "B1"}, {"run-a", "1", "A1"}, {"run-b", "2", SideReply}, {"run-a", "2", "A2"}, {"run-c", "1", Exhausted},
	} {
		if got := ask(c.run, c.n); !strings.Contains(got, c.want) {
			t.Errorf("%s request %s got %s, want %s", c.run, c.n, got, c.want)
		}
	}
	if s.Served() != 3 {
		t.Errorf("served %d turns, want 3", s.Served())
	}
}

// A turn held until the client left was never written: the client's
// retry gets the next turn.
func TestRetryAfterAbandonedHold(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	s := New(Turn{Text: "held", Hold: hold}, Turn{Text: "next"})
	defer s.Close()
	body := `{"model":"m",` + tools + `}`
	ctx, cancel := context.WithCancel(context.Background())
	changed := s.Changed()
	go func() {
		<-changed
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(body))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the held request was answered")
	}
	resp := post(t, context.Background(), s.URL()+"/v1/messages", body)
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "next") {
		t.Errorf("the retry got %s, want the next turn", b)
	}
}

// A retry is known by its conversation: other fields of the body may
// change.
func TestRetryKnownByConversation(t *testing.T) {
	s := New(Turn{Text: "first"}, Turn{Text: "second"})
	defer s.Close()
	for i, body := range []string{
		`{"model":"m","metadata":{"try":1},` + tools + `,"messages":[{"content":"one"}]}`,
		`{"model":"m","metadata":{"try":2},` + tools + `,"messages":[{"content":"one"}]}`,
	} {
		resp := post(t, context.Background(), s.URL()+"/v1/messages", body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "first") {
			t.Errorf("request %d got %s, want the first turn", i, b)
		}
	}
}

// A turn for a key goes only to a request carrying it, however each API
// carries it.
func TestTurnForKey(t *testing.T) {
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	s := New(Turn{Text: "for b", Key: "sk-b"}, func() Turn { l := Limited(Responses, reset); l.Key = "sk-a"; return l }())
	defer s.Close()
	send := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/responses", strings.NewReader(`{"model":"m","stream":true,`+tools+`,"input":"`+key+`"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := send("sk-a")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var body struct {
		Error struct {
			Type     string `json:"type"`
			ResetsAt int64  `json:"resets_at"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != 429 || body.Error.Type != "usage_limit_reached" || body.Error.ResetsAt != reset.Unix() {
		t.Errorf("account a: %d %s, want 429 usage_limit_reached resetting at %d", resp.StatusCode, b, reset.Unix())
	}
	resp = send("sk-b")
	resp.Body.Close()
	if reqs := s.Requests(); len(reqs) != 2 || reqs[0].Turn != 1 || reqs[1].Turn != 0 || reqs[1].Key() != "sk-b" {
		t.Errorf("requests %+v, want a's the limit and b's its turn", reqs)
	}
}

func TestRequestKey(t *testing.T) {
	cases := []struct {
		header http.Header
		path   string
		want   string
	}{
		{http.Header{"Authorization": {"Bearer sk-1"}}, "/v1/responses", "sk-1"},
		{http.Header{"X-Api-Key": {"sk-ant-2"}}, "/v1/messages", "sk-ant-2"},
		{http.Header{"X-Goog-Api-Key": {"g-3"}}, "/v1beta/models/m:streamGenerateContent?alt=sse", "g-3"},
		{http.Header{}, "/v1beta/models/m:generateContent?key=g-4", "g-4"},
		{http.Header{}, "/v1/messages", ""},
	}
	for _, c := range cases {
		if got := (Request{Header: c.header, Path: c.path}).Key(); got != c.want {
			t.Errorf("Key of %v %s = %q, want %q", c.header, c.path, got, c.want)
		}
	}
}

// Each API's limit is a 429 whose reset the vendor's own fields carry.
func TestLimited(t *testing.T) {
	reset := time.Now().Add(90 * time.Second)
	for api, want := range map[API]string{
		Responses:       `"resets_in_seconds":90`,
		Messages:        `"type":"rate_limit_error"`,
		ChatCompletions: `try again in 90s`,
		Gemini:          `"retryDelay":"90s"`,
	} {
		l := Limited(api, reset)
		if l.Status != 429 || !strings.Contains(l.Body, want) || !json.Valid([]byte(l.Body)) {
			t.Errorf("%s: %d %s, want 429 with %s", api, l.Status, l.Body, want)
		}
	}
}
