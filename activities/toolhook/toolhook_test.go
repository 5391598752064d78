package toolhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestOutput(t *testing.T) {
	for _, c := range []struct {
		cli   string
		allow *bool
		want  string
	}{
		{"claude", nil, `{}`},
		{"claude", Yes(), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"r"}}`},
		{"claude", No(), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"r"}}`},
		{"codex", Yes(), `{}`},
		{"codex", No(), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"r"}}`},
		{"gemini", No(), `{"decision":"deny","reason":"r"}`},
		{"opencode", Yes(), `{"decision":"allow","reason":"r"}`},
		{"acp", nil, `{}`},
	} {
		b, _ := json.Marshal(Output(c.cli, c.allow, "r"))
		if string(b) != c.want {
			t.Errorf("%s %v: %s, want %s", c.cli, c.allow, b, c.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		name  string
		call  Call
		allow *bool
		want  string
	}{
		{"Default", Call{ID: "tc1", Decision: Allow, By: ByPolicy}, nil, ""},
		{"Rule", Call{ID: "tc1", Decision: Allow, By: ByPolicy, Rule: "r"}, Yes(), "allowed by ampflow (tc1)"},
		{"Admin", Call{ID: "tc1", Decision: Allow, By: "ops", Channel: "slack"}, Yes(), "allowed by ops via slack (tc1)"},
		{"Denied", Call{ID: "tc1", Decision: Deny, Reason: "no"}, No(), "ampflow: Bash denied (tc1): no"},
		{"Strange", Call{ID: "tc1", Decision: "maybe"}, No(), `ampflow: tc1: unexpected answer "maybe"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			allow, reason := Verdict("Bash", c.call)
			if (allow == nil) != (c.allow == nil) || allow != nil && *allow != *c.allow || reason != c.want {
				t.Errorf("%v %q", allow, reason)
			}
		})
	}
}

// TestRunDeniesWhatItCannotAsk: no task, no API, an API that refuses
// the credential: each call is denied, with the reason.
func TestRunDeniesWhatItCannotAsk(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":{"code":"forbidden","message":"not this run's"}}`))
	}))
	t.Cleanup(refusing.Close)
	for _, c := range []struct {
		name string
		h    Hook
		want string
	}{
		{"NoTask", Hook{CLI: "gemini", APIURL: refusing.URL}, EnvTaskID},
		{"NoAPI", Hook{CLI: "gemini", TaskID: "T-2026-001"}, EnvAPIURL},
		{"Refused", Hook{CLI: "gemini", TaskID: "T-2026-001", APIURL: refusing.URL}, "not this run's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := c.h.Run(context.Background(), strings.NewReader(`{"tool_name":"run_shell_command","tool_input":{}}`), &out); err != nil {
				t.Fatal(err)
			}
			var a struct{ Decision, Reason string }
			if json.Unmarshal(out.Bytes(), &a) != nil || a.Decision != "deny" || !strings.Contains(a.Reason, c.want) {
				t.Errorf("%s", out.String())
			}
		})
	}
}
