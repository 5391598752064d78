package telegram

import (
	"strconv"
	"time"

	"github.com/ampflow/ampflow/integrations/chat"
)

// StateFile is the name of the bot's state file in its state dir.
const StateFile = "telegram.json"

// keepNotes is how long a note prompt waits for its reply.
const keepNotes = 24 * time.Hour

// msgRef is one posted copy of a decision.
type msgRef struct {
	ChatID    int64 `json:"chat_id"`
	MessageID int   `json:"message_id"`
	Closed    bool  `json:"closed,omitempty"`
}

// IsClosed, AsClosed and String implement chat.Ref.
func (r msgRef) IsClosed() bool   { return r.Closed }
func (r msgRef) AsClosed() msgRef { r.Closed = true; return r }
func (r msgRef) String() string   { return strconv.Itoa(r.MessageID) }

// noteRequest is an option waiting for its note: the admin who chose it
// must reply to the bot's prompt.
type noteRequest struct {
	Token  string    `json:"token"`
	UserID string    `json:"user_id"`
	At     time.Time `json:"at"`
}

type (
	posted = chat.Posted[msgRef]
	button = chat.Button
	store  = chat.Store[msgRef, *stateData]
)

type stateData struct {
	chat.State[msgRef]
	// Notes are the pending note prompts by "chat:message" of the prompt.
	Notes map[string]noteRequest `json:"notes"`
}

// Init implements chat.Data, with the note prompts.
func (d *stateData) Init() {
	d.State.Init()
	if d.Notes == nil {
		d.Notes = map[string]noteRequest{}
	}
}

// Prune implements chat.Data: note prompts go after keepNotes.
func (d *stateData) Prune(now time.Time) {
	d.State.Prune(now)
	for k, n := range d.Notes {
		if now.Sub(n.At) > keepNotes {
			delete(d.Notes, k)
		}
	}
}

func openStore(dir string) (*store, error) {
	return chat.OpenStore[msgRef](dir, StateFile, &stateData{})
}
