package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/chat/chattest"
	"github.com/ampflow/ampflow/integrations/slack/slacktest"
	"github.com/ampflow/ampflow/integrations/telegram/telegramtest"
)

// The helpers the package's tests share.

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last error: %v)", what, within, last)
}

// gitRepo makes a repository with main and a feature branch carrying a commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(dir, "README.md"), "demo\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "initial")
	git(t, dir, "checkout", "-q", "-b", "feature/e2e")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@localhost"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The chat platforms' fakes (slacktest, telegramtest) and what the tests
// read of their calls.
type (
	chatCall     = chattest.Call
	fakeTelegram = telegramtest.Server
	fakeSlack    = slacktest.Server
)

// await waits until a call of method to a fake satisfies match and
// returns it.
func await(t *testing.T, f interface {
	Find(string, func(chatCall) bool) []chatCall
}, what, method string, match func(chatCall) bool) chatCall {
	t.Helper()
	var got chatCall
	eventually(t, 60*time.Second, what, func() (bool, error) {
		cs := f.Find(method, match)
		if len(cs) == 0 {
			return false, nil
		}
		got = cs[0]
		return true, nil
	})
	return got
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
	return append(tg.Unserved(), sl.Unserved()...)
}
