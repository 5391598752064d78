package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// MaxWait bounds the wait of a long-polling inbox request unless
// Options.MaxWait sets another bound.
const MaxWait = 60 * time.Second

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
	wait, err := parseWait(q.Get("wait"), s.maxWait)
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
	// The wall clock, not Options.Now: the wait runs on real timers.
	deadline := time.Now().Add(wait)
	if wait > 0 {
		s.extendDeadlines(w, r, wait)
	}
	for {
		rows, next, err := s.store.InboxOf(ctx, f, p.storePage())
		if ctx.Err() != nil {
			return // the client went away; nobody reads an answer
		}
		if err != nil {
			s.writeError(w, r, storeError(err, "the "+string(role)+" inbox"))
			return
		}
		left := time.Until(deadline)
		if len(rows) > 0 || left <= 0 {
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
			return
		}
		t := time.NewTimer(min(s.poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
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

// extendDeadlines gives a long poll its wait on top of the server's read
// and write timeouts, which would otherwise cut it off: the write deadline
// ends the answer, and the read deadline cancels the request's context.
func (s *Server) extendDeadlines(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	rc := http.NewResponseController(w)
	now := time.Now()
	if err := rc.SetReadDeadline(now.Add(wait + s.readTO)); err != nil {
		s.log.Debug("extending the read deadline of a long poll", "path", r.URL.Path, "err", err)
	}
	if err := rc.SetWriteDeadline(now.Add(wait + s.writeTO)); err != nil {
		s.log.Debug("extending the write deadline of a long poll", "path", r.URL.Path, "err", err)
	}
}

// parseWait reads a wait as a Go duration ("30s") or whole seconds
// ("30"), at most maxWait.
func parseWait(v string, maxWait time.Duration) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, InvalidField("wait", `must be a duration such as "30s"`)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > maxWait {
		return 0, InvalidField("wait", fmt.Sprintf("must be between 0 and %s", task.FormatDuration(maxWait)))
	}
	return d, nil
}

// LongPoll reads a request's wait query parameter as GET /v1/inbox does
// (a Go duration or whole seconds, at most the server's MaxWait; an
// invalid one is an error naming wait) and, for a wait above zero,
// extends the connection's deadlines by it. The rooms' long polls share
// it. Poll is how long to sleep between looks.
func (s *Server) LongPoll(w http.ResponseWriter, r *http.Request) (wait, poll time.Duration, err error) {
	wait, err = parseWait(r.URL.Query().Get("wait"), s.maxWait)
	if err != nil {
		return 0, 0, err
	}
	if wait > 0 {
		s.extendDeadlines(w, r, wait)
	}
	return wait, s.poll, nil
}
