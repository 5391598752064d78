package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
)

// envParkFile names the file a runner's hook writes when it parks a call
// (activities.EnvParkFile).
const envParkFile = "AMPFLOW_PARK_FILE"

// parkHold bounds how long the hook of a CLI that cannot defer waits for
// the runner to stop it once the park is written.
var parkHold = time.Minute

// hookPark parks the call id of a runner's run: the park file tells the
// runner, which keeps the session and ends the run without a process until
// the admins answer. Claude Code is told to defer the call: it stops, and
// runs the call again through this hook when its session is resumed. The
// other CLIs are stopped by the runner while the hook waits; the hook ends
// when the runner removes the park file, or after parkHold, denying the
// call with the reason.
func (a *App) hookPark(ctx context.Context, cli, id, reason string) error {
	path, _ := a.LookupEnv(envParkFile)
	if err := runner.WritePark(path, runner.Park{ToolCallID: id, At: time.Now().UTC()}); err != nil {
		msg := fmt.Sprintf("ampflow: parking %s: %v", id, err)
		fmt.Fprintln(a.Stderr, msg)
		no := false
		return a.PrintJSON(hookOutput(cli, &no, msg))
	}
	fmt.Fprintln(a.Stderr, reason)
	if cli == "claude" {
		return a.PrintJSON(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "defer", "permissionDecisionReason": reason}})
	}
	// The CLI may run its hooks outside its process group: the runner
	// removes the park file once the CLI is stopped, and the hook goes too.
	t := time.NewTimer(parkHold)
	defer t.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-t.C:
			break wait
		case <-tick.C:
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				break wait
			}
		}
	}
	no := false
	return a.PrintJSON(hookOutput(cli, &no, reason))
}
