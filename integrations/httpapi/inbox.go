package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/task"
)

// MaxWait bounds the wait of a long-polling inbox request unless
// Options.MaxWait sets another bound.
const MaxWait = 60 * time.Second

// InboxResponse is the answer to GET /v1/inbox.
type InboxResponse struct {
	Role     amp.Role      `json:"role"`
	Messages []amp.Message `json:"messages"`
	// NextCursor asks for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
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
		s.writeError(w, r, invalidField("role", "must be executor or reviewer"))
		return
	}
	// An inbox holds what is sent to its agents: only they and admins read it.
	if !c.open && c.role != role && c.role != amp.RoleAdmin {
		s.writeError(w, r, task.Errorf(task.CodeForbidden, "the %s inbox is read by a token of role %s or admin; %q is %s", role, role, c.name, c.role))
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
		rows, next, err := s.store.Inbox(ctx, string(role), p.storePage())
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
			for _, row := range rows {
				var m amp.Message
				if err := json.Unmarshal(row.Body, &m); err != nil {
					s.writeError(w, r, storeError(fmt.Errorf("message %s: %w", row.MsgID, err), "the "+string(role)+" inbox"))
					return
				}
				msgs = append(msgs, m)
			}
			writeJSON(w, http.StatusOK, InboxResponse{Role: role, Messages: msgs, NextCursor: p.storeNext(next)})
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
			return 0, invalidField("wait", `must be a duration such as "30s"`)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > maxWait {
		return 0, invalidField("wait", fmt.Sprintf("must be between 0 and %s", task.FormatDuration(maxWait)))
	}
	return d, nil
}
