package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ampflow/ampflow/activities/toolhook"
)

// Park is a run stopped while a tool call waits for the admins: the tool
// policy's hook, past tools.ask_timeout, writes it to Spec.ParkFile, and
// the run ends without a process until the call is answered; the next run
// resumes the session. The hook's own package defines it, so the small
// hook binary writes what Run reads.
type Park = toolhook.Park

// parkPoll is how often Run looks for the park file.
const parkPoll = 200 * time.Millisecond

// WritePark writes p to path, whole or not at all.
func WritePark(path string, p Park) error { return toolhook.WritePark(path, p) }

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
