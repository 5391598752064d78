package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Park is a run stopped while a tool call waits for the admins: the tool
// policy's hook, past tools.ask_timeout, writes it to Spec.ParkFile, and
// the run ends without a process until the call is answered; the next run
// resumes the session.
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

// parkPoll is how often Run looks for the park file.
const parkPoll = 200 * time.Millisecond

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

// readPark reads the park file at path; nil when there is none.
func readPark(path string) (*Park, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p Park
	if err := json.Unmarshal(b, &p); err != nil || p.ToolCallID == "" {
		return nil, fmt.Errorf("the park file %s names no tool call", path)
	}
	return &p, nil
}

// deferrer is a format whose CLI stops by itself when its hook parks a
// call (Claude Code's permissionDecision "defer"); the others are stopped
// by Run once the park file is there.
type deferrer interface{ defersParkedCalls() }

func (claudeFormat) defersParkedCalls() {}
