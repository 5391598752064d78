package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestRunParked: a hook that parks a call writes the park file; a CLI that
// does not stop by itself (codex's format) is stopped, one that defers
// (claude's) exits on its own, unless its hook holds the call rather than
// deferring it (a call beside others of its message); either way the Outcome names the call, is
// no success, and the file is gone after the run.
func TestRunParked(t *testing.T) {
	const park = `{"tool_call":"T-2026-001-tc2","at":"2026-11-26T20:00:00Z"}`
	const hold = `{"tool_call":"T-2026-001-tc2","at":"2026-11-26T20:00:00Z","hold":true}`
	for _, tc := range []struct {
		name, runner, script string
		reason               Reason
	}{
		{"Codex", Codex, `echo '{"type":"thread.started","thread_id":"th-1"}'` + "\n" +
			`printf '%s' '` + park + `' > "$AMPFLOW_PARK_FILE"` + "\n" + `sleep 30`, ReasonParked},
		{"ClaudeHeld", Claude, sh(initLine) + `printf '%s' '` + hold + `' > "$AMPFLOW_PARK_FILE"` + "\n" + `sleep 30`, ReasonParked},
		{"ClaudeDeferred", Claude, sh(initLine) + `printf '%s' '` + park + `' > "$AMPFLOW_PARK_FILE"` + "\n" +
			`echo '{"type":"result","subtype":"success","is_error":false,"result":"","stop_reason":"tool_deferred","session_id":"sess-1"}'`, ReasonExited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scriptSpec(t, tc.script)
			s.Runner = tc.runner
			s.ParkFile = filepath.Join(t.TempDir(), "parks", "p.json")
			if err := os.MkdirAll(filepath.Dir(s.ParkFile), 0o700); err != nil {
				t.Fatal(err)
			}
			// A park left by an earlier run is not this one's.
			if err := os.WriteFile(s.ParkFile, []byte(`{"tool_call":"stale-tc1"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			s.Env = append(s.Env, "AMPFLOW_PARK_FILE="+s.ParkFile)
			o := runScript(t, context.Background(), s, nil)
			if o.Parked == nil || o.Parked.ToolCallID != "T-2026-001-tc2" {
				t.Fatalf("parked %+v (outcome %+v)", o.Parked, o)
			}
			if o.Reason != tc.reason || o.Succeeded() || o.Failure != nil || o.SessionID == "" {
				t.Errorf("outcome %+v", o)
			}
			if _, err := os.Stat(s.ParkFile); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the park file is still there: %v", err)
			}
		})
	}
}
