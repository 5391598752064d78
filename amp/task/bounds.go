package task

import (
	"fmt"

	"github.com/ampflow/ampflow/amp"
)

// MaxHeartbeatNote bounds a heartbeat's note, in bytes.
const MaxHeartbeatNote = 4 << 10

// Validate refuses a note over MaxHeartbeatNote.
func (in HeartbeatInput) Validate() error {
	if n := len(in.Note); n > MaxHeartbeatNote {
		return &Error{Code: CodeInvalid, Message: fmt.Sprintf("note: %d bytes, at most %d", n, MaxHeartbeatNote),
			Fields: []amp.FieldError{{Path: "note", Problem: fmt.Sprintf("at most %d bytes", MaxHeartbeatNote)}}}
	}
	return nil
}
