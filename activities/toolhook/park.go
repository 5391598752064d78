package toolhook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Park is a run stopped while a tool call waits for the admins: the hook,
// past tools.ask_timeout, writes it to the run's park file, and the run
// ends without a process until the call is answered; the next run resumes
// the session.
type Park struct {
	// ToolCallID is the parked call's id in its task ("<task_id>-tc<n>").
	ToolCallID string `json:"tool_call"`
	// At is when the hook parked it.
	At time.Time `json:"at"`
	// Hold is set when the hook holds the call rather than deferring it:
	// the runner stops the CLI even if it could defer (Claude Code does
	// not defer a call beside others of its message).
	Hold bool `json:"hold,omitempty"`
}

// WritePark writes p to path, whole or not at all.
func WritePark(path string, p Park) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing the park file %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing the park file %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the park file %s: %w", path, err)
	}
	return nil
}

// ParkHold bounds how long the hook of a CLI that cannot defer waits for
// the runner to stop it once the park is written.
var ParkHold = time.Minute

// park parks the call id: the park file tells the runner, which keeps the
// session and ends the run without a process until the admins answer.
// Claude Code is told to defer the call when it is the only one of its
// message: it stops, and runs the call again through the hook when its
// session is resumed. Claude Code ignores a defer beside other calls (and
// could then run the call unasked), so there, as for the other CLIs, the
// runner stops the CLI while the hook waits (Held); the hook then denies
// the call with the reason.
func (h *Hook) park(ctx context.Context, id, reason string, in Input, out io.Writer) error {
	deferred := false
	if h.CLI == "claude" {
		var err error
		if deferred, err = Defers(in); err != nil {
			fmt.Fprintf(h.stderr(), "ampflow: %v: holding %s rather than deferring it\n", err, id)
		}
	}
	if err := WritePark(h.ParkFile, Park{ToolCallID: id, At: time.Now().UTC(), Hold: !deferred}); err != nil {
		msg := fmt.Sprintf("ampflow: parking %s: %v", id, err)
		fmt.Fprintln(h.stderr(), msg)
		return WriteJSON(out, Output(h.CLI, No(), msg))
	}
	fmt.Fprintln(h.stderr(), reason)
	if deferred {
		return WriteJSON(out, DeferOutput(reason))
	}
	Held(ctx, h.ParkFile)
	return WriteJSON(out, Output(h.CLI, No(), reason))
}

// DeferOutput is Claude Code's answer deferring a parked call.
func DeferOutput(reason string) any { return claudeOutput("defer", reason) }

// Defers reports whether Claude Code defers the call of in when told to:
// it is the only tool call of its message.
func Defers(in Input) (bool, error) {
	n, err := claudeToolUses(in.TranscriptPath, in.ToolUseID)
	return err == nil && n == 1, err
}

// Held waits until the runner has stopped the CLI and removed the park
// file at path, or ParkHold has passed: the CLI may run its hooks outside
// its process group, so the hook goes with the file.
func Held(ctx context.Context, path string) {
	t := time.NewTimer(ParkHold)
	defer t.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-tick.C:
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return
			}
		}
	}
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
