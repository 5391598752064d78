package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

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
	// NextCursor asks for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DecisionsResponse is the answer to GET /v1/decisions.
type DecisionsResponse struct {
	Decisions []task.Decision `json:"decisions"`
	// NextCursor asks for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DecideRequest is the body of POST /v1/decisions/{id}.
type DecideRequest struct {
	Option string `json:"option"`
	Note   string `json:"note,omitempty"`
}

// decisionChannel is the DecideInput.Channel of decisions taken here.
const decisionChannel = "api"

// inbox answers a page of the messages awaiting role, oldest first. With
// wait it long-polls: it looks again every poll interval until the page
// has something, the wait is over or the client has gone.
func (s *Server) inbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	role := amp.Role(q.Get("role"))
	if c := callerOf(r); role == "" && (c.role == string(amp.RoleExecutor) || c.role == string(amp.RoleReviewer)) {
		role = amp.Role(c.role)
	}
	if role != amp.RoleExecutor && role != amp.RoleReviewer {
		s.writeError(w, r, invalidField("role", "must be executor or reviewer"))
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

func (s *Server) listDecisions(w http.ResponseWriter, r *http.Request) {
	p, err := readPage(r.URL.Query(), listDecisions)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.store == nil {
		s.writeError(w, r, noStore())
		return
	}
	rows, next, err := s.store.Pending(r.Context(), p.storePage())
	if err != nil {
		s.writeError(w, r, storeError(err, "open decisions"))
		return
	}
	ds := make([]task.Decision, 0, len(rows))
	for _, row := range rows {
		var d task.Decision
		if err := json.Unmarshal(row.Body, &d); err != nil {
			s.writeError(w, r, storeError(fmt.Errorf("decision %s: %w", row.ID, err), "open decisions"))
			return
		}
		ds = append(ds, d)
	}
	writeJSON(w, http.StatusOK, DecisionsResponse{Decisions: ds, NextCursor: p.storeNext(next)})
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	taskID, ok := taskOfDecision(id)
	if !ok {
		s.writeError(w, r, invalidField("id", fmt.Sprintf("%q is not a decision id T-YYYY-NNN-dN", id)))
		return
	}
	var req DecideRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(req.Option) == "" {
		s.writeError(w, r, invalidField("option", "is required"))
		return
	}
	c := callerOf(r)
	res, err := s.tasks.Decide(r.Context(), taskID, task.DecideInput{
		DecisionID: id, Option: req.Option, Note: req.Note, By: c.name, Channel: decisionChannel,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("decision taken over HTTP", "task_id", taskID, "decision_id", id, "option", req.Option, "by", c.name)
	writeJSON(w, http.StatusOK, res)
}

// taskOfDecision returns the task of a decision id "T-YYYY-NNN-dN":
// everything before the last "-d".
func taskOfDecision(id string) (string, bool) {
	i := strings.LastIndex(id, "-d")
	if i < 0 {
		return "", false
	}
	n := id[i+2:]
	if n == "" || strings.Trim(n, "0123456789") != "" || !task.ValidID(id[:i]) {
		return "", false
	}
	return id[:i], true
}
