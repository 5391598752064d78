package slack

import (
	"github.com/ampflow/ampflow/integrations/chat"
)

// msgRef is one posted copy of a decision.
type msgRef struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	Closed  bool   `json:"closed,omitempty"`
}

// IsClosed, AsClosed and String implement chat.Ref.
func (r msgRef) IsClosed() bool   { return r.Closed }
func (r msgRef) AsClosed() msgRef { r.Closed = true; return r }
func (r msgRef) String() string   { return r.TS }

type (
	posted = chat.Posted[msgRef]
	button = chat.Button
)
