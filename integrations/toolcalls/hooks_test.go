package toolcalls

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/runcred"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/config/toolpolicy"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
)

// serveHooks serves the routes with run credentials and parks under dir;
// it returns the URL and a credential of the executor's run on
// T-2026-001.
func serveHooks(t *testing.T, dir string, askTimeout time.Duration) (*fakeTask, string, string) {
	f := &fakeTask{}
	key := runcred.Key([]byte("decision-key-for-the-hook-route-test"))
	api := httpapi.New(httpapi.Options{Tasks: nil, RunKey: key, Tokens: []config.AuthToken{{Token: "exec-token", Role: "executor", Name: "exec"}}})
	pol, err := toolpolicy.New(toolpolicy.DefaultRules(), toolpolicy.Allow)
	if err != nil {
		t.Fatal(err)
	}
	Register(api, Options{Tasks: f, Store: f, Policy: pol, AskTimeout: askTimeout, Poll: 10 * time.Millisecond,
		Parks: func(taskID string, role amp.Role, cli string) string {
			return filepath.Join(dir, taskID+"."+string(role), cli+".json")
		}})
	cred, _, err := runcred.Mint(key, runcred.Claims{Task: "T-2026-001", Role: amp.RoleExecutor, Agent: "exec", Expires: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return f, httpapitest.Serve(t, api), cred
}

type claudeAnswer struct {
	H struct {
		Event    string `json:"hookEventName"`
		Decision string `json:"permissionDecision"`
		Reason   string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

func hookCall(t *testing.T, url, cred string, in map[string]any) (int, claudeAnswer, string) {
	t.Helper()
	r := httpapitest.Do(t, "POST", url, cred, in)
	var a claudeAnswer
	_ = json.Unmarshal(r.Body, &a)
	return r.Status, a, string(r.Body)
}

// bashCall is a call as Claude Code posts it, with fields the route does
// not read.
func bashCall(cmd string) map[string]any {
	return map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": cmd}, "cwd": "/w",
		"permission_mode": "bypassPermissions", "session_id": "s1"}
}

// TestHookRoute: Claude Code's HTTP hook gets its answers in its own
// format, for the run credential's task only.
func TestHookRoute(t *testing.T) {
	f, url, cred := serveHooks(t, t.TempDir(), time.Minute)
	st, a, raw := hookCall(t, url+"/v1/hooks/claude?worktree=/w", cred, bashCall("git push --force origin main"))
	if st != http.StatusOK || a.H.Event != "PreToolUse" || a.H.Decision != "deny" || !strings.Contains(a.H.Reason, "force pushes are not allowed") {
		t.Errorf("force push: %d %s", st, raw)
	}
	if len(f.records) != 1 || !strings.Contains(string(f.records[0].Body), `"worktree":"/w"`) || !strings.Contains(string(f.records[0].Body), `"cli":"claude"`) {
		t.Errorf("records %+v", f.records)
	}
	if st, _, raw := hookCall(t, url+"/v1/hooks/claude", cred, bashCall("ls")); st != http.StatusOK || strings.TrimSpace(raw) != "{}" {
		t.Errorf("allowed by default: %d %s", st, raw)
	}
	r := httpapitest.Do(t, "POST", url+"/v1/hooks/opencode", cred, bashCall("git push --force origin main"))
	var o struct{ Decision, Reason string }
	if json.Unmarshal(r.Body, &o) != nil || o.Decision != "deny" || !strings.Contains(o.Reason, "force pushes") {
		t.Errorf("opencode: %d %s", r.Status, r.Body)
	}
	// A run's credential asks about its own task only, and an unknown
	// CLI or no tool is refused, which Claude Code takes as a block.
	for _, c := range []struct {
		path string
		body map[string]any
		want int
	}{
		{"/v1/hooks/claude?task=T-2026-002", bashCall("ls"), http.StatusForbidden},
		{"/v1/hooks/cursor", bashCall("ls"), http.StatusBadRequest},
		{"/v1/hooks/claude", map[string]any{"cwd": "/w"}, http.StatusBadRequest},
	} {
		if st, _, raw := hookCall(t, url+c.path, cred, c.body); st != c.want {
			t.Errorf("%s: %d %s, want %d", c.path, st, raw, c.want)
		}
	}
	if st, _, _ := hookCall(t, url+"/v1/hooks/claude", "not-a-credential", bashCall("ls")); st != http.StatusUnauthorized {
		t.Errorf("no credential: %d", st)
	}
	// A CLI run by hand presents an API token and names its task.
	if st, a, raw := hookCall(t, url+"/v1/hooks/claude?task=T-2026-002", "exec-token", bashCall("git push --force origin main")); st != http.StatusOK || a.H.Decision != "deny" {
		t.Errorf("with a token: %d %s", st, raw)
	}
}

// TestHookRoutePark: an ask still open at the ask timeout parks the run:
// the park file names the call; Claude Code is told to defer a call
// alone in its message, and any other call is held until the runner
// removes the park file, then denied.
func TestHookRoutePark(t *testing.T) {
	dir := t.TempDir()
	_, url, cred := serveHooks(t, dir, 300*time.Millisecond)
	park := filepath.Join(dir, "T-2026-001.executor", "claude.json")
	readPark := func() map[string]any {
		var p map[string]any
		b, err := os.ReadFile(park)
		if err != nil || json.Unmarshal(b, &p) != nil {
			t.Fatalf("park file: %v %s", err, b)
		}
		return p
	}
	t.Run("Deferred", func(t *testing.T) {
		transcript := filepath.Join(t.TempDir(), "session.jsonl")
		line := `{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash"}]}}`
		if err := os.WriteFile(transcript, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		in := bashCall("curl -s http://127.0.0.1:9/")
		in["transcript_path"], in["tool_use_id"] = transcript, "toolu_1"
		st, a, raw := hookCall(t, url+"/v1/hooks/claude", cred, in)
		if st != http.StatusOK || a.H.Decision != "defer" || !strings.Contains(a.H.Reason, "parked") {
			t.Fatalf("%d %s", st, raw)
		}
		if p := readPark(); p["tool_call"] == "" || p["hold"] == true {
			t.Errorf("park %v", p)
		}
		_ = os.Remove(park)
	})
	t.Run("Held", func(t *testing.T) {
		done := make(chan struct{})
		var st int
		var a claudeAnswer
		go func() {
			defer close(done)
			st, a, _ = hookCall(t, url+"/v1/hooks/claude", cred, bashCall("curl -s http://127.0.0.1:9/x"))
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(park); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if p := readPark(); p["hold"] != true {
			t.Errorf("park %v", p)
		}
		select {
		case <-done:
			t.Fatal("the held call was answered before the runner removed the park file")
		case <-time.After(300 * time.Millisecond):
		}
		if err := os.Remove(park); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		<-done
		if st != http.StatusOK || a.H.Decision != "deny" || !strings.Contains(a.H.Reason, "parked") {
			t.Errorf("%d %+v", st, a)
		}
	})
}
