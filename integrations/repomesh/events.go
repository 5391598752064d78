package repomesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Listing bounds of the inbox and search.
const (
	DefaultEventLimit = 50
	MaxEventLimit     = 500
)

// Sender is the name the system's own events come from.
const Sender = "ampflow"

// EventList is a page of events.
type EventList struct {
	Events     []Event `json:"events"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// ReadRequest is POST /v1/events/{id}/read.
type ReadRequest struct {
	// AgentID is the reader; empty is the caller.
	AgentID string `json:"agent_id,omitempty"`
}

func eventOf(e ssot.MeshEvent) Event {
	out := Event{ID: e.ID, Seq: e.Seq, Type: e.Type, Severity: e.Severity, AgentID: e.AgentID, Channel: e.Channel,
		ThreadID: e.ThreadID, CreatedAt: e.CreatedAt, Payload: e.Payload, ReadBy: []ReadReceipt{}}
	for _, r := range e.ReadBy {
		out.ReadBy = append(out.ReadBy, ReadReceipt(r))
	}
	return out
}

func eventsOf(evs []ssot.MeshEvent, next string) EventList {
	out := EventList{Events: []Event{}, NextCursor: next}
	for _, e := range evs {
		out.Events = append(out.Events, eventOf(e))
	}
	return out
}

// tellError stores an agent.error event to the caller: the document's
// error response, kept in the mesh so an agent that missed the HTTP
// answer finds it in its inbox. retryAfter is omitted when zero.
func (a *API) tellError(r *http.Request, action string, code task.Code, msg string, retryAfter int64, extra map[string]any) {
	a.tellErrorTo(r, httpapi.CallerOf(r).Name, action, code, msg, retryAfter, extra)
}

// tellErrorTo stores an agent.error event to the agent to.
func (a *API) tellErrorTo(r *http.Request, to, action string, code task.Code, msg string, retryAfter int64, extra map[string]any) {
	if a.store == nil {
		return
	}
	payload := map[string]any{"from": Sender, "from_id": Sender, "to": to, "original_action": action,
		"error_code": string(code), "message": msg, "timestamp": a.now().UTC()}
	if retryAfter > 0 {
		payload["retry_after_ms"] = retryAfter
	}
	for k, v := range extra {
		payload[k] = v
	}
	body, _ := json.Marshal(payload)
	e := ssot.MeshEvent{ID: newID(ssot.SystemEventPrefix + "E"), Type: TypeError, Severity: "error", From: Sender, FromID: Sender, To: to,
		Subject: string(code) + ": " + action, Content: msg, CreatedAt: a.now(), Payload: body}
	if _, err := a.store.AppendEvent(r.Context(), e); err != nil {
		a.log.Error("storing an agent.error event", "to", to, "code", code, "error", err)
	}
}

func (a *API) postEvent(w http.ResponseWriter, r *http.Request) {
	if a.unavailable(w, r) {
		return
	}
	var env Envelope
	if err := a.srv.Decode(w, r, &env); err != nil {
		a.refuse(w, r, err)
		return
	}
	c := httpapi.CallerOf(r)
	if len(env.ID) > MaxName {
		a.refuse(w, r, &task.Error{Code: CodeInvalidPayload, Message: "id: too long",
			Fields: []amp.FieldError{{Path: "id", Problem: fmt.Sprintf("is longer than %d bytes", MaxName)}}})
		return
	}
	if strings.HasPrefix(env.ID, ssot.SystemEventPrefix) {
		problem := fmt.Sprintf("starts with %q, the prefix of the system's own events", ssot.SystemEventPrefix)
		a.refuse(w, r, httpapi.FieldError(CodeInvalidPayload, "id", problem))
		return
	}
	env.Payload = withSender(env, c)
	ev, errs := check(env, a.now())
	if len(errs) > 0 {
		paths := make([]string, len(errs))
		for i, e := range errs {
			paths[i] = e.Path
		}
		a.refuse(w, r, &task.Error{Code: CodeInvalidPayload,
			Message: "invalid " + env.Type + " event: " + strings.Join(paths, ", "), Fields: errs})
		return
	}
	for _, k := range []string{"from", "from_id", "agent_id", "reviewer_id"} {
		if name, _ := ev.payload[k].(string); name != "" && !mayActAs(c, name) {
			a.denied(w, r, "event.log", name+" (payload."+k+")")
			return
		}
	}
	switch {
	case adminOnly(ev.typ) && !isAdmin(c):
		a.denied(w, r, "event.log", Sender+" ("+ev.typ+" events are the system's)")
		return
	case env.AgentID != "" && !mayActAs(c, env.AgentID):
		a.denied(w, r, "event.log", env.AgentID)
		return
	}
	if ev.typ == "task.claimed" && !a.claim(w, r, ev) {
		return
	}
	if ev.typ == "test.result" && !a.mayReportTests(w, r, ev) {
		return
	}
	if ev.from == "" {
		ev.from = c.Name
	}
	agentID := env.AgentID
	if agentID == "" {
		agentID = c.Name
	}
	id := env.ID
	if id == "" {
		id = newID("E")
	}
	body, _ := json.Marshal(ev.payload)
	stored, err := a.store.AppendEvent(r.Context(), ssot.MeshEvent{ID: id, Type: ev.typ, Severity: ev.severity,
		AgentID: agentID, From: ev.from, FromID: ev.fromID, To: ev.to, Subject: ev.subject, Content: ev.content,
		ParentID: ev.parent, TaskID: ev.taskID, Channel: ev.channel, CreatedAt: a.now(), Payload: body,
		Deliver: slices.DeleteFunc(slices.Clone(ev.mentions), func(m string) bool { return m == ev.to })})
	if errors.Is(err, ssot.ErrEventIDTaken) {
		// The id is another sender's: nothing of its event is answered.
		const problem = "is taken by another sender's event"
		a.tellError(r, "event.log", task.CodeConflict, "id: "+problem, 0, map[string]any{"id": id})
		a.srv.Error(w, r, &task.Error{Code: task.CodeConflict, Message: "id " + id + " " + problem,
			Fields: []amp.FieldError{{Path: "id", Problem: problem}}})
		return
	}
	if err != nil {
		var inv *ssot.InvalidError
		if errors.As(err, &inv) {
			a.refuse(w, r, httpapi.FieldError(CodeInvalidPayload, inv.Field, inv.Problem))
			return
		}
		a.srv.Error(w, r, err)
		return
	}
	if stored.Type == "test.result" {
		a.onTestResult(r, stored)
	}
	httpapi.WriteJSON(w, http.StatusCreated, eventOf(stored))
}

// refuse answers an invalid event with 400 naming the fields, and tells
// the sender in the mesh with an agent.error event.
func (a *API) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var te *task.Error
	if errors.As(err, &te) && (te.Code == task.CodeInvalid || te.Code == CodeInvalidPayload) {
		te = &task.Error{Code: CodeInvalidPayload, Message: te.Message, Fields: te.Fields, Err: te.Err}
		fields := make([]string, len(te.Fields))
		for i, f := range te.Fields {
			fields[i] = f.String()
		}
		a.tellError(r, "event.log", CodeInvalidPayload, te.Message, 0, map[string]any{"fields": fields})
		err = te
	}
	a.srv.Error(w, r, err)
}

func timeParam(q map[string][]string, name string) (time.Time, error) {
	v := ""
	if vs := q[name]; len(vs) > 0 {
		v = vs[0]
	}
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, httpapi.InvalidField(name, "must be an RFC 3339 time such as 2026-02-22T23:20:00Z")
	}
	return t, nil
}

func (a *API) inbox(w http.ResponseWriter, r *http.Request) {
	if a.unavailable(w, r) {
		return
	}
	q := r.URL.Query()
	c := httpapi.CallerOf(r)
	who := q.Get("recipient_id")
	if who == "" {
		who = c.Name
	}
	if !mayActAs(c, who) {
		a.denied(w, r, "event.inbox", who)
		return
	}
	recipients := []string{who}
	if slices.Contains(selfNames(c), who) {
		recipients = selfNames(c) // by name or id
	}
	iq := ssot.InboxQuery{Recipients: recipients, Channel: q.Get("channel")}
	switch b := q.Get("include_broadcast"); b {
	case "", "false", "0":
	case "true", "1":
		iq.Broadcast = true
	default:
		a.srv.Error(w, r, httpapi.InvalidField("include_broadcast", "must be true or false"))
		return
	}
	// The caller's own inbox reads oldest first, as a consumer works
	// through it; another's (an admin's look) newest first.
	own := slices.Contains(selfNames(c), who)
	switch d := q.Get("direction"); d {
	case "":
		iq.Desc = !own
	case "desc":
		iq.Desc = true
	case "asc":
	default:
		a.srv.Error(w, r, httpapi.InvalidField("direction", "must be asc or desc"))
		return
	}
	var err error
	if iq.Since, err = timeParam(q, "since"); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	p, err := pageOf(q.Get("limit"), q.Get("cursor"), DefaultEventLimit, MaxEventLimit)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	wait, poll, err := a.srv.LongPoll(w, r)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	ctx := r.Context()
	var evs []ssot.MeshEvent
	var next string
	err = httpapi.Poll(ctx, wait, poll, func() (bool, error) {
		var err error
		evs, next, err = a.store.MeshInbox(ctx, iq, p)
		return len(evs) > 0, err
	})
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		a.srv.Error(w, r, storeError(err, "inbox"))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, eventsOf(evs, next))
}

func (a *API) search(w http.ResponseWriter, r *http.Request) {
	if a.unavailable(w, r) {
		return
	}
	q := r.URL.Query()
	sq := ssot.SearchQuery{From: q.Get("from"), To: q.Get("to"), Type: q.Get("type"), TaskID: q.Get("task_id"), Q: q.Get("q"),
		Viewers: viewerNames(httpapi.CallerOf(r))}
	if len(sq.Q) > MaxSubject {
		a.srv.Error(w, r, httpapi.InvalidField("q", fmt.Sprintf("is longer than %d bytes", MaxSubject)))
		return
	}
	if sq.Q != "" && len(ssot.Keywords(sq.Q)) == 0 {
		a.srv.Error(w, r, httpapi.InvalidField("q", "has no keywords (letters or digits)"))
		return
	}
	var err error
	if sq.Since, err = timeParam(q, "since"); err == nil {
		sq.Until, err = timeParam(q, "until")
	}
	if err == nil && !sq.Since.IsZero() && !sq.Until.IsZero() && sq.Since.After(sq.Until) {
		err = &task.Error{Code: task.CodeInvalid, Message: "since: is after until",
			Fields: []amp.FieldError{{Path: "since", Problem: "is after until"}, {Path: "until", Problem: "is before since"}}}
	}
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	p, err := pageOf(q.Get("limit"), q.Get("cursor"), DefaultEventLimit, MaxEventLimit)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	evs, next, err := a.store.SearchEvents(r.Context(), sq, p)
	if err != nil {
		a.srv.Error(w, r, storeError(err, "search"))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, eventsOf(evs, next))
}

// withSender fills a chat's absent payload from and from_id with the
// caller's token name (and its id, when the token has one), so an agent
// sends without naming itself. A name given is checked as before.
func withSender(env Envelope, c httpapi.Caller) json.RawMessage {
	if env.Type != TypeChat && !slices.Contains(legacyTypes, env.Type) || c.Name == "" {
		return env.Payload
	}
	var p map[string]any
	d := json.NewDecoder(bytes.NewReader(env.Payload))
	d.UseNumber() // keep numbers as sent
	if d.Decode(&p) != nil || p == nil {
		return env.Payload
	}
	from, _ := p["from"].(string)
	if from == "" {
		from = c.Name
		p["from"] = from
	}
	if id, _ := p["from_id"].(string); id == "" && env.Type == TypeChat {
		p["from_id"] = from
		if from == c.Name && c.ID != "" {
			p["from_id"] = c.ID
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return env.Payload
	}
	return b
}
