package telegram

import (
	"strconv"

	"github.com/ampflow/ampflow/integrations/chat"
)

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

type (
	posted = chat.Posted[msgRef]
	button = chat.Button
)
