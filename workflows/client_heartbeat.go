package workflows

import (
	"sync"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

// Heartbeats reach a task as signals, which its workflow cannot refuse
// and which stay in its history, so the client coalesces them per task.
const (
	// HeartbeatEvery is the least time between two heartbeats of one
	// task from one role that are sent: a heartbeat sooner after the last
	// one sent is taken and not sent (the task knows the agent is alive).
	// A recovered or recovering heartbeat is always sent, and so is the
	// first heartbeat after a recovering one from the role it recovers,
	// and an account's note.
	HeartbeatEvery = 5 * time.Second
	// NoteEvery is the least time between two heartbeat notes of one task
	// that are sent: a heartbeat due in between is sent without its note.
	NoteEvery = 30 * time.Second
)

// beatThrottle remembers when each task last had a heartbeat and a note
// sent by this client.
type beatThrottle struct {
	mu    sync.Mutex
	beats map[string]time.Time // task id and role
	notes map[string]time.Time // task id
}

// maxThrottled is how many tasks the throttle remembers before it
// forgets those past their windows.
const maxThrottled = 4096

// admit reports whether in is sent to taskID now, and with what note.
func (b *beatThrottle) admit(taskID string, in task.HeartbeatInput, now time.Time) (task.HeartbeatInput, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.beats == nil {
		b.beats, b.notes = map[string]time.Time{}, map[string]time.Time{}
	}
	if len(b.beats) > maxThrottled {
		for k, at := range b.beats {
			if now.Sub(at) >= HeartbeatEvery {
				delete(b.beats, k)
			}
		}
		for k, at := range b.notes {
			if now.Sub(at) >= NoteEvery {
				delete(b.notes, k)
			}
		}
	}
	if in.Account {
		// A run's account at its limit: rare, and the timeline keeps it.
		return in, true
	}
	key := taskID + "\x00" + string(in.From)
	if last, ok := b.beats[key]; ok && !in.Recovered && in.Recovering == nil && now.Sub(last) < HeartbeatEvery {
		return in, false
	}
	b.beats[key] = now
	if r := in.Recovering; r != nil {
		// The retried run's first heartbeat ends the recovery: it is sent.
		delete(b.beats, taskID+"\x00"+string(r.Role))
	}
	if in.Note != "" {
		if last, ok := b.notes[taskID]; ok && now.Sub(last) < NoteEvery {
			in.Note = ""
		} else {
			b.notes[taskID] = now
		}
	}
	return in, true
}
