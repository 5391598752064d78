package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// InboxResponse is the answer to GET /v1/inbox.
type InboxResponse struct {
	Role     amp.Role      `json:"role"`
	Messages []amp.Message `json:"messages"`
	// Acked lists, with include=acked, the messages of the page that the
	// caller ACKed and has not answered yet: its own work, which no other
	// agent sees.
	Acked []AckedMessage `json:"acked"`
	// NextCursor asks for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// AckedMessage is a message of an inbox page that its holder ACKed.
type AckedMessage struct {
	MsgID  string    `json:"msg_id"`
	TaskID string    `json:"task_id"`
	By     string    `json:"by"`
	At     time.Time `json:"acked_at"`
}

// inbox answers a page of the messages awaiting role, oldest first. With
// wait it long-polls: it looks again every poll interval until the page
// has something, the wait is over or the client has gone.
func (s *Server) inbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	role := amp.Role(q.Get("role"))
	c := callerOf(r)
	if role == "" && (c.role == amp.RoleExecutor || c.role == amp.RoleReviewer) {
		role = c.role
	}
	if role != amp.RoleExecutor && role != amp.RoleReviewer {
		s.writeError(w, r, InvalidField("role", "must be executor or reviewer"))
		return
	}
	// An inbox holds what is sent to its agents: only they and admins read it.
	if !c.open && c.role != role && c.role != amp.RoleAdmin {
		s.writeError(w, r, task.Errorf(task.CodeForbidden, "the %s inbox is read by a token of role %s or admin; %q is %s", role, role, c.name, c.role))
		return
	}
	f, err := inboxFilter(r, role)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	wait, poll, err := s.LongPoll(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := readPage(q, listInbox)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.store == nil {
		s.writeError(w, r, noStore())
		return
	}
	ctx := r.Context()
	var rows []ssot.OutboxMessage
	var next string
	err = Poll(ctx, wait, poll, func() (bool, error) {
		var err error
		rows, next, err = s.store.InboxOf(ctx, f, p.storePage())
		return len(rows) > 0, err
	})
	if ctx.Err() != nil {
		return // the client went away; nobody reads an answer
	}
	if err != nil {
		s.writeError(w, r, storeError(err, "the "+string(role)+" inbox"))
		return
	}
	msgs := make([]amp.Message, 0, len(rows))
	var acked []AckedMessage
	for _, row := range rows {
		if row.Holder != "" {
			acked = append(acked, AckedMessage{MsgID: row.MsgID, TaskID: row.TaskID, By: row.Holder, At: row.AckedAt})
		}
		var m amp.Message
		if err := json.Unmarshal(row.Body, &m); err != nil {
			s.writeError(w, r, storeError(fmt.Errorf("message %s: %w", row.MsgID, err), "the "+string(role)+" inbox"))
			return
		}
		msgs = append(msgs, m)
	}
	writeJSON(w, http.StatusOK, InboxResponse{Role: role, Messages: msgs, Acked: acked, NextCursor: p.storeNext(next)})
}

// inboxFilter reads include=acked (the caller's own ACKed, unanswered
// messages too) and mine=true (those alone). They need a token's name:
// an open API records no holders.
func inboxFilter(r *http.Request, role amp.Role) (ssot.InboxFilter, error) {
	q := r.URL.Query()
	f := ssot.InboxFilter{Role: string(role)}
	switch v := q.Get("include"); v {
	case "":
	case "acked":
		f.Holder = "*"
	default:
		return f, InvalidField("include", fmt.Sprintf("%q: must be acked", v))
	}
	switch v := q.Get("mine"); v {
	case "", "false":
	case "true":
		f.Holder, f.HeldOnly = "*", true
	default:
		return f, InvalidField("mine", fmt.Sprintf("%q: must be true or false", v))
	}
	if f.Holder == "" {
		return f, nil
	}
	c := callerOf(r)
	if c.open || c.name == "" {
		if f.HeldOnly {
			return f, InvalidField("mine", "needs a token: an open API records nobody as holding work")
		}
		f.Holder = "" // nobody holds anything
		return f, nil
	}
	f.Holder = c.name
	return f, nil
}
