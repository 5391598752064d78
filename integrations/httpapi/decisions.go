package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// DecisionsResponse is the answer to GET /v1/decisions.
type DecisionsResponse struct {
	Decisions []decision.Decision `json:"decisions"`
	// NextCursor asks for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DecideRequest is the body of POST /v1/decisions/{id}.
type DecideRequest struct {
	Option string `json:"option"`
	Note   string `json:"note,omitempty"`
	// Digest is the digest of the decision as the admin was shown it.
	Digest string `json:"digest"`
}

// decisionChannel is the Answer.Channel of decisions taken here.
const decisionChannel = "api"

// maxDecisionID bounds the {id} of POST /v1/decisions/{id}, in bytes.
const maxDecisionID = 200

// DecisionLookup says where an answer to a decision goes: the workflow
// that raised it, the decision's subject. The id is never parsed for it.
type DecisionLookup interface {
	// FindDecision returns decision id as it stands. It finds every open
	// decision; a closed one where the store still knows it, so that a
	// late answer reaches its workflow and is refused there with who
	// decided. An unknown id is a *task.Error with code not_found.
	FindDecision(ctx context.Context, id string) (decision.Decision, error)
}

// storedDecisions is the DecisionLookup of Options.Decisions left nil:
// the decision's record in the store, written when it was raised, so that
// an answer to a closed decision too reaches its workflow and is refused
// there with who decided.
type storedDecisions struct {
	store Records
}

func (l storedDecisions) FindDecision(ctx context.Context, id string) (decision.Decision, error) {
	if l.store == nil {
		return decision.Decision{}, noStore()
	}
	rec, err := l.store.Get(ctx, id)
	switch {
	case err == nil && rec.Kind == string(ssot.KindDecision):
		var d decision.Decision
		if json.Unmarshal(rec.Body, &d) == nil && d.ID == id {
			if d.Subject == "" {
				d.Subject = rec.TaskID
			}
			return d, nil
		}
	case err != nil && !errors.Is(err, ssot.ErrNotFound):
		return decision.Decision{}, storeError(err, "decision "+id)
	}
	return decision.Decision{}, &task.Error{Code: task.CodeNotFound, Message: fmt.Sprintf("decision %s: no such decision; GET /v1/decisions lists the open ones", id)}
}

// listDecisions lists the open decisions of every workflow from the
// store's index, oldest first: one query, whatever the number of open
// tasks.
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
	ds := make([]decision.Decision, 0, len(rows))
	for _, row := range rows {
		var d decision.Decision
		if err := json.Unmarshal(row.Body, &d); err != nil {
			s.writeError(w, r, storeError(fmt.Errorf("decision %s: %w", row.ID, err), "open decisions"))
			return
		}
		ds = append(ds, d)
	}
	writeJSON(w, http.StatusOK, DecisionsResponse{Decisions: ds, NextCursor: p.storeNext(next)})
}

// decide answers a decision. The workflow has the last word: it refuses
// a digest other than the open decision's (stale_decision) and a second
// answer (decided), and those refusals reach the client as they are.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := checkDecisionID(id); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req DecideRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(req.Option) == "" {
		s.writeError(w, r, InvalidField("option", "is required"))
		return
	}
	digest, err := checkDigest(req.Digest)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.decisions.FindDecision(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if digest == "" {
		s.writeError(w, r, InvalidField("digest", "is required: the digest of the decision as shown, 64 hex characters (GET /v1/decisions lists it)"))
		return
	}
	subject := d.Subject
	c := callerOf(r)
	res, err := s.tasks.Decide(r.Context(), subject, decision.Answer{
		DecisionID: id, Option: req.Option, Note: req.Note, Digest: digest, By: c.name, Channel: decisionChannel,
	})
	if err != nil {
		if task.ErrorCode(err) == task.CodeFinished {
			// The answer that ended the task is in the SSOT: a late one
			// hears who gave it, as it would while the task ran.
			if answered := s.answered(r.Context(), id); answered != nil {
				err = answered
			}
		}
		s.writeError(w, r, err)
		return
	}
	if res.Open() {
		s.log.Info("approval counted over HTTP", "subject", subject, "decision_id", id, "by", c.name, "progress", res.Progress)
	} else {
		s.log.Info("decision taken over HTTP", "subject", subject, "decision_id", id, "option", req.Option, "by", c.name)
	}
	writeJSON(w, http.StatusOK, res)
}

// checkDecisionID refuses an id no decision can have, before any lookup.
func checkDecisionID(id string) error {
	switch {
	case id == "":
		return InvalidField("id", "is required")
	case len(id) > maxDecisionID:
		return InvalidField("id", fmt.Sprintf("%d bytes, at most %d", len(id), maxDecisionID))
	case strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return InvalidField("id", "must not contain spaces or control characters")
	}
	return nil
}

// checkDigest reads a decision digest, when there is one: the 64 hex
// characters of a SHA-256, in either case.
func checkDigest(v string) (string, error) {
	if v == "" {
		return "", nil // the caller checks it against the decision
	}
	v = strings.ToLower(v)
	if len(v) != 64 || strings.Trim(v, "0123456789abcdef") != "" {
		return "", InvalidField("digest", "must be 64 hex characters: the digest of the decision as shown (GET /v1/decisions lists it)")
	}
	return v, nil
}

// answered is the refusal of an answer to decision id, which its record
// says was closed: decided, with who, how and when, or stale when it was
// withdrawn. Nil when the store has no outcome of it.
func (s *Server) answered(ctx context.Context, id string) *task.Error {
	if s.store == nil {
		return nil
	}
	rec, err := s.store.Get(ctx, id+"-outcome")
	if err != nil {
		return nil
	}
	var o decision.Outcome
	if json.Unmarshal(rec.Body, &o) != nil || o.DecisionID != id {
		return nil
	}
	if o.Option == decision.OptWithdrawn {
		return task.Errorf(task.CodeStaleDecision, "decision %s was withdrawn at %s: %s", id, o.At.UTC().Format(time.RFC3339), o.Note)
	}
	return task.Errorf(task.CodeDecided, "%s", o.Refusal())
}
