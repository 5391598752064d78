package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// chatCall is one request a fake chat API received: its method, its form
// fields (the first value of each) and, for a new message, the id the
// fake gave it (Telegram's message_id, Slack's ts).
type chatCall struct {
	Method string
	Form   map[string]string
	NewID  string
}

// fakeTelegram is an httptest fake of the Bot API methods the bot calls.
// getUpdates answers from a queue the test pushes to, holding an empty
// poll briefly so the bot's loop does not spin.
type fakeTelegram struct {
	srv   *httptest.Server
	token string

	mu      sync.Mutex
	calls   []chatCall
	updates []map[string]any
	nextMsg int
	wake    chan struct{}
	// unknown lists the methods called that the fake does not serve.
	unknown []string
}

// tgHold is how long an empty getUpdates waits for an update.
const tgHold = 500 * time.Millisecond

func newFakeTelegram(t *testing.T, token string) *fakeTelegram {
	f := &fakeTelegram{token: token, nextMsg: 100, wake: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// push queues an update; its update_id is assigned here.
func (f *fakeTelegram) push(upd map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	upd["update_id"] = len(f.updates) + 1
	f.updates = append(f.updates, upd)
	close(f.wake)
	f.wake = make(chan struct{})
}

// pressed is a callback_query update: user pressing a button with data.
func pressed(queryID string, user int64, data string) map[string]any {
	return map[string]any{"callback_query": map[string]any{
		"id":            queryID,
		"from":          map[string]any{"id": user, "is_bot": false, "first_name": "user" + strconv.FormatInt(user, 10)},
		"chat_instance": "e2e",
		"data":          data,
	}}
}

// find returns the calls of method that satisfy match.
func (f *fakeTelegram) find(method string, match func(chatCall) bool) []chatCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []chatCall
	for _, c := range f.calls {
		if c.Method == method && (match == nil || match(c)) {
			out = append(out, c)
		}
	}
	return out
}

// await waits until a call of method satisfies match and returns it.
func (f *fakeTelegram) await(t *testing.T, what, method string, match func(chatCall) bool) chatCall {
	t.Helper()
	var got chatCall
	eventually(t, 60*time.Second, what, func() (bool, error) {
		cs := f.find(method, match)
		if len(cs) == 0 {
			return false, nil
		}
		got = cs[0]
		return true, nil
	})
	return got
}

func (f *fakeTelegram) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+f.token+"/")
	if !ok {
		tgReply(w, http.StatusUnauthorized, map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
		return
	}
	form := map[string]string{}
	if err := r.ParseMultipartForm(1 << 20); err == nil {
		for k, v := range r.MultipartForm.Value {
			form[k] = v[0]
		}
	}
	if method == "getUpdates" {
		offset, _ := strconv.Atoi(form["offset"])
		tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": f.poll(r, offset)})
		return
	}
	f.mu.Lock()
	c := chatCall{Method: method, Form: form}
	if method == "sendMessage" {
		f.nextMsg++
		c.NewID = strconv.Itoa(f.nextMsg)
	}
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	chat, _ := strconv.ParseInt(form["chat_id"], 10, 64)
	message := func(id int) map[string]any {
		return map[string]any{"message_id": id, "date": time.Now().Unix(), "text": form["text"],
			"chat": map[string]any{"id": chat, "type": "supergroup", "title": "ampflow e2e"}}
	}
	switch method {
	case "getMe":
		tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{
			"id": 1000, "is_bot": true, "first_name": "ampflow", "username": "ampflow_e2e_bot"}})
	case "sendMessage":
		id, _ := strconv.Atoi(c.NewID)
		tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": message(id)})
	case "editMessageText", "editMessageReplyMarkup":
		id, _ := strconv.Atoi(form["message_id"])
		tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": message(id)})
	case "answerCallbackQuery", "deleteWebhook":
		tgReply(w, http.StatusOK, map[string]any{"ok": true, "result": true})
	default:
		f.mu.Lock()
		f.unknown = append(f.unknown, method)
		f.mu.Unlock()
		tgReply(w, http.StatusNotFound, map[string]any{"ok": false, "error_code": 404, "description": "Not Found: method " + method})
	}
}

// poll returns the updates from offset on, waiting up to tgHold for one.
func (f *fakeTelegram) poll(r *http.Request, offset int) []map[string]any {
	hold := time.NewTimer(tgHold)
	defer hold.Stop()
	for {
		f.mu.Lock()
		var out []map[string]any
		for _, u := range f.updates {
			if u["update_id"].(int) >= offset {
				out = append(out, u)
			}
		}
		wake := f.wake
		f.mu.Unlock()
		if len(out) > 0 {
			return out
		}
		select {
		case <-wake:
		case <-hold.C:
			return []map[string]any{}
		case <-r.Context().Done():
			return []map[string]any{}
		}
	}
}

func tgReply(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// tgButton is one inline keyboard button of a recorded reply_markup.
type tgButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// tgKeyboard decodes the inline keyboard of a recorded call; ok is false
// when the call carries no reply_markup.
func tgKeyboard(t *testing.T, c chatCall) (rows [][]tgButton, ok bool) {
	t.Helper()
	raw, ok := c.Form["reply_markup"]
	if !ok {
		return nil, false
	}
	var m struct {
		InlineKeyboard [][]tgButton `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("%s reply_markup %q: %v", c.Method, raw, err)
	}
	return m.InlineKeyboard, true
}

// fakeSlack is an httptest fake of the Web API methods the bot calls.
type fakeSlack struct {
	srv   *httptest.Server
	token string

	mu      sync.Mutex
	calls   []chatCall
	seq     int
	unknown []string
}

func newFakeSlack(t *testing.T, token string) *fakeSlack {
	f := &fakeSlack{token: token}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// apiURL is the Web API base to configure.
func (f *fakeSlack) apiURL() string { return f.srv.URL + "/api/" }

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	body, _ := io.ReadAll(r.Body)
	vals, _ := url.ParseQuery(string(body))
	form := map[string]string{}
	for k, v := range vals {
		form[k] = v[0]
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+f.token && form["token"] != f.token {
		fmt.Fprint(w, `{"ok":false,"error":"invalid_auth"}`)
		return
	}
	f.mu.Lock()
	f.seq++
	ts := fmt.Sprintf("1772366400.%06d", f.seq)
	c := chatCall{Method: method, Form: form}
	if method == "chat.postMessage" {
		c.NewID = ts
	}
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	switch method {
	case "chat.postMessage":
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": form["channel"], "ts": ts})
	case "chat.update":
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": form["channel"], "ts": form["ts"], "text": form["text"]})
	case "chat.postEphemeral":
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "message_ts": ts})
	case "auth.test":
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "user_id": "UBOT", "team_id": "T1", "user": "ampflow"})
	default:
		f.mu.Lock()
		f.unknown = append(f.unknown, method)
		f.mu.Unlock()
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func (f *fakeSlack) find(method string, match func(chatCall) bool) []chatCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []chatCall
	for _, c := range f.calls {
		if c.Method == method && (match == nil || match(c)) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSlack) await(t *testing.T, what, method string, match func(chatCall) bool) chatCall {
	t.Helper()
	var got chatCall
	eventually(t, 60*time.Second, what, func() (bool, error) {
		cs := f.find(method, match)
		if len(cs) == 0 {
			return false, nil
		}
		got = cs[0]
		return true, nil
	})
	return got
}

// slackButton is one button of an actions block in recorded blocks.
type slackButton struct {
	BlockID  string
	ActionID string
	Value    string
	Label    string
}

// slackButtons decodes the buttons of the blocks a call recorded.
func slackButtons(t *testing.T, c chatCall) []slackButton {
	t.Helper()
	var blocks []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			// Text is an object on buttons and a string on context
			// elements.
			Text json.RawMessage `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(c.Form["blocks"]), &blocks); err != nil {
		t.Fatalf("%s blocks %q: %v", c.Method, c.Form["blocks"], err)
	}
	var out []slackButton
	for _, b := range blocks {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type != "button" {
				continue
			}
			var label struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(e.Text, &label); err != nil {
				t.Fatalf("button text %s: %v", e.Text, err)
			}
			out = append(out, slackButton{BlockID: b.BlockID, ActionID: e.ActionID, Value: e.Value, Label: label.Text})
		}
	}
	return out
}

// postInteraction POSTs a Slack interaction payload to endpoint as Slack does,
// signed with secret, and returns the status code.
func postInteraction(t *testing.T, endpoint, secret string, payload any) int {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	body := "payload=" + url.QueryEscape(string(raw))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", endpoint, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// unserved returns the methods either fake was called with and does not
// serve: the bots reached for more of the API than the fakes know.
func unserved(tg *fakeTelegram, sl *fakeSlack) []string {
	tg.mu.Lock()
	out := append([]string(nil), tg.unknown...)
	tg.mu.Unlock()
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return append(out, sl.unknown...)
}
