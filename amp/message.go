package amp

import (
	"encoding/json"
	"fmt"
	"time"
)

// TimestampLayout is how ampflow writes timestamps: RFC 3339 with an
// explicit numeric offset, as in the spec's examples.
const TimestampLayout = "2006-01-02T15:04:05-07:00"

// DefaultAckTimeout returns the spec's default ack_timeout_sec for a type;
// zero means the type needs no ACK (escalation).
func DefaultAckTimeout(t Type) int {
	switch t {
	case TypeTaskDispatch:
		return 300
	case TypeTaskResult:
		return 120
	case TypeReviewRequest:
		return 600
	case TypeReviewVerdict:
		return 60
	}
	return 0
}

// MsgID builds the "{type}-{task_id}-{unix_ms}" id of a message (or, with
// AckPrefix as the type, of an ACK record).
func MsgID(t Type, taskID string, at time.Time) string {
	return fmt.Sprintf("%s-%s-%d", t, taskID, at.UnixMilli())
}

// NewMessage builds a valid envelope around p: msg_id and timestamp from at,
// the protocol version, and requires_ack with the type's default
// ack_timeout_sec (none for escalation).
func NewMessage(from, to Role, taskID string, at time.Time, p Payload) Message {
	t := p.MessageType()
	m := Message{
		MsgID:           MsgID(t, taskID, at),
		ProtocolVersion: ProtocolVersion,
		Type:            t,
		From:            from,
		To:              to,
		TaskID:          taskID,
		Timestamp:       at.Format(TimestampLayout),
		Payload:         p,
	}
	if sec := DefaultAckTimeout(t); sec > 0 {
		m.RequiresAck = true
		m.AckTimeoutSec = &sec
	}
	return m
}

// NewAck builds the ACK record of msg, written by from at the given time.
func NewAck(from Role, msg Message, at time.Time) Ack {
	return Ack{
		MsgID:           MsgID(AckPrefix, msg.TaskID, at),
		ProtocolVersion: ProtocolVersion,
		AckOf:           msg.MsgID,
		TaskID:          msg.TaskID,
		From:            from,
		Timestamp:       at.Format(TimestampLayout),
	}
}

// AckTimeout is the message's ACK deadline: its own ack_timeout_sec, else
// def; zero when it requires no ACK.
func (m Message) AckTimeout(def time.Duration) time.Duration {
	if !m.RequiresAck {
		return 0
	}
	if m.AckTimeoutSec != nil && *m.AckTimeoutSec > 0 {
		return time.Duration(*m.AckTimeoutSec) * time.Second
	}
	return def
}

// NewPayload returns an empty payload of type t, or nil for an unknown type.
func NewPayload(t Type) Payload {
	switch t {
	case TypeTaskDispatch:
		return &TaskDispatch{}
	case TypeTaskResult:
		return &TaskResult{}
	case TypeReviewRequest:
		return &ReviewRequest{}
	case TypeReviewVerdict:
		return &ReviewVerdict{}
	case TypeEscalation:
		return &Escalation{}
	}
	return nil
}

// UnmarshalJSON decodes a message and its typed payload leniently; use
// Parse for input from outside, which also validates.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw rawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message{
		MsgID: raw.MsgID, ProtocolVersion: raw.ProtocolVersion, Type: raw.Type,
		From: raw.From, To: raw.To, TaskID: raw.TaskID, Timestamp: raw.Timestamp,
		RequiresAck: raw.RequiresAck, AckTimeoutSec: raw.AckTimeoutSec, ContextRef: raw.ContextRef,
	}
	p := NewPayload(raw.Type)
	if p == nil {
		return fmt.Errorf("unknown message type %q", raw.Type)
	}
	if len(raw.Payload) > 0 && string(raw.Payload) != "null" {
		if err := json.Unmarshal(raw.Payload, p); err != nil {
			return fmt.Errorf("decoding %s payload: %w", raw.Type, err)
		}
	}
	m.Payload = p
	return nil
}

// Dispatch returns the payload as a task_dispatch, or nil.
func (m Message) Dispatch() *TaskDispatch { p, _ := m.Payload.(*TaskDispatch); return p }

// Result returns the payload as a task_result, or nil.
func (m Message) Result() *TaskResult { p, _ := m.Payload.(*TaskResult); return p }

// Request returns the payload as a review_request, or nil.
func (m Message) Request() *ReviewRequest { p, _ := m.Payload.(*ReviewRequest); return p }

// Verdict returns the payload as a review_verdict, or nil.
func (m Message) Verdict() *ReviewVerdict { p, _ := m.Payload.(*ReviewVerdict); return p }

// Escalation returns the payload as an escalation, or nil.
func (m Message) Escalation() *Escalation { p, _ := m.Payload.(*Escalation); return p }
