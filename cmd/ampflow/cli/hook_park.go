package cli

import (
	"bufio"
	"context"
	"encoding/json"
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
// the admins answer. Claude Code is told to defer the call when it is the
// only one of its message: it stops, and runs the call again through this
// hook when its session is resumed. Claude Code ignores a defer beside
// other calls (and could then run the call unasked), so there, as for the
// other CLIs, the runner stops the CLI while the hook waits; the hook ends
// when the runner removes the park file, or after parkHold, denying the
// call with the reason.
func (a *App) hookPark(ctx context.Context, cli, id, reason string, in hookInput) error {
	path, _ := a.LookupEnv(envParkFile)
	deferred := false
	if cli == "claude" {
		n, err := claudeToolUses(in.TranscriptPath, in.ToolUseID)
		deferred = err == nil && n == 1
		if err != nil {
			fmt.Fprintf(a.Stderr, "ampflow: %v: holding %s rather than deferring it\n", err, id)
		}
	}
	if err := runner.WritePark(path, runner.Park{ToolCallID: id, At: time.Now().UTC(), Hold: !deferred}); err != nil {
		msg := fmt.Sprintf("ampflow: parking %s: %v", id, err)
		fmt.Fprintln(a.Stderr, msg)
		no := false
		return a.PrintJSON(hookOutput(cli, &no, msg))
	}
	fmt.Fprintln(a.Stderr, reason)
	if deferred {
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

// claudeToolUses counts the tool calls of the assistant message that holds
// the call toolUseID in Claude Code's JSONL transcript. Claude Code writes
// a streamed message as one line per content block, each with the
// message's id, so the lines of that id are counted together.
func claudeToolUses(transcript, toolUseID string) (int, error) {
	if transcript == "" || toolUseID == "" {
		return 0, errors.New("the hook's input names no transcript_path or tool_use_id")
	}
	f, err := os.Open(transcript)
	if err != nil {
		return 0, fmt.Errorf("reading the transcript: %w", err)
	}
	defer f.Close()
	type line struct {
		Type    string `json:"type"`
		Message struct {
			ID      string          `json:"id"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	calls := map[string]map[string]bool{} // message id -> its tool_use ids
	msg := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Type != "assistant" || l.Message.ID == "" {
			continue
		}
		var blocks []struct{ Type, ID string }
		if json.Unmarshal(l.Message.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type != "tool_use" {
				continue
			}
			if calls[l.Message.ID] == nil {
				calls[l.Message.ID] = map[string]bool{}
			}
			calls[l.Message.ID][b.ID] = true
			if b.ID == toolUseID {
				msg = l.Message.ID
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading the transcript: %w", err)
	}
	if msg == "" {
		return 0, fmt.Errorf("the transcript has no tool call %s", toolUseID)
	}
	return len(calls[msg]), nil
}
