package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// SubmitResponse is the answer to POST /v1/messages and POST /v1/acks.
type SubmitResponse struct {
	MsgID     string      `json:"msg_id"`
	Status    task.Status `json:"status"`
	Duplicate bool        `json:"duplicate"`
	// Warnings name each way a task_result's diff_summary differs from
	// what git shows for its commit, as the reviewer will be told; the
	// result is taken all the same.
	Warnings []string `json:"warnings"`
}

// AckRequest is the short form of POST /v1/acks: acknowledge a message
// waiting in an inbox without writing the ACK record oneself.
type AckRequest struct {
	MsgID string `json:"msg_id"`
	// As is the acknowledging role; it defaults to the token's role.
	As amp.Role `json:"as,omitempty"`
}

// HeartbeatRequest is the body of POST /v1/heartbeats.
type HeartbeatRequest struct {
	TaskID string `json:"task_id"`
	// From is the role the heartbeat is for; it defaults to the token's
	// role, as an ACK's as does (required when the API is open).
	From amp.Role `json:"from,omitempty"`
	Note string   `json:"note,omitempty"`
}

// MessageRequest is the short form of POST /v1/messages: a payload of
// one of amp.AgentTypes, wrapped by the server in an envelope as ampflow
// send --type does (msg_id and timestamp now, from and to by the type's
// route).
type MessageRequest struct {
	Type   amp.Type `json:"type"`
	TaskID string   `json:"task_id"`
	// From names the sender of an escalation only; it defaults to the
	// token's role.
	From    amp.Role        `json:"from,omitempty"`
	Payload json.RawMessage `json:"payload"`
}

// errorSource is the Source of the error log entries the API writes.
const errorSource = "http"

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.refuse(w, r, body, err)
		return
	}
	if isShortForm(body) {
		built, err := s.buildMessage(r, body)
		if err != nil {
			s.refuse(w, r, body, err)
			return
		}
		body = built
	}
	s.submitRecord(w, r, body)
}

// isShortForm reports whether body is an object without the keys that
// mark a whole envelope (msg_id, protocol_version) or an ACK record
// (ack_of): a MessageRequest.
func isShortForm(body []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return false
	}
	for _, k := range []string{"msg_id", "protocol_version", "ack_of"} {
		if _, ok := obj[k]; ok {
			return false
		}
	}
	return true
}

// buildMessage turns a MessageRequest into the envelope it stands for.
func (s *Server) buildMessage(r *http.Request, body []byte) ([]byte, error) {
	var req MessageRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	var fields []amp.FieldError
	if req.Type == "" {
		fields = append(fields, amp.FieldError{Path: "type", Problem: "is required: task_result, review_verdict or escalation"})
	} else if !slices.Contains(amp.AgentTypes(), req.Type) {
		fields = append(fields, amp.FieldError{Path: "type", Problem: fmt.Sprintf("%q: must be task_result, review_verdict or escalation (send other types as a whole envelope)", req.Type)})
	}
	if !task.ValidID(req.TaskID) {
		fields = append(fields, amp.FieldError{Path: "task_id", Problem: "must be a task id T-YYYY-NNN"})
	}
	if len(req.Payload) == 0 || string(req.Payload) == "null" {
		fields = append(fields, amp.FieldError{Path: "payload", Problem: "is required: the message's payload object"})
	}
	if len(fields) > 0 {
		return nil, invalidFields(fields)
	}
	from := req.From
	if c := callerOf(r); req.Type == amp.TypeEscalation && from == "" && !c.open {
		from = c.role
	}
	m, err := amp.WrapAgent(req.Payload, req.Type, req.TaskID, from, s.now())
	if err != nil {
		return nil, workflows.InvalidRecord(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", m.MsgID, err)
	}
	return b, nil
}

// submitRecord validates an AMP record, checks that the caller may send
// it and hands it to its task.
func (s *Server) submitRecord(w http.ResponseWriter, r *http.Request, body []byte) {
	rec, err := amp.ParseRecord(body)
	if err != nil {
		s.refuse(w, r, body, workflows.InvalidRecord(err))
		return
	}
	from := amp.Role("")
	if rec.Ack != nil {
		from = rec.Ack.From
	} else {
		from = rec.Message.From
	}
	if c := callerOf(r); !c.mayAct(from) {
		s.refuse(w, r, body, task.Errorf(task.CodeForbidden,
			"from: token %q has role %s and may not send as %s", c.name, c.role, from))
		return
	}
	res, err := s.tasks.Submit(agentContext(r), body)
	if err != nil {
		s.refuse(w, r, body, err)
		return
	}
	s.accepted(w, res)
}

func (s *Server) accepted(w http.ResponseWriter, res task.SubmitResult) {
	writeJSON(w, http.StatusAccepted, SubmitResponse{MsgID: res.MsgID, Status: res.Status, Duplicate: res.Duplicate, Warnings: res.Warnings})
}

// agentContext is r's context carrying the agent that sends: the
// token's name, which the task records as the holder of the work the
// agent takes (task.Holder) and checks every later ACK, reply and
// heartbeat against. An open API names nobody.
func agentContext(r *http.Request) context.Context {
	c := callerOf(r)
	if c.open || c.name == "" {
		return r.Context()
	}
	return workflows.WithAgent(r.Context(), workflows.Agent{Name: c.name, Admin: c.role == amp.RoleAdmin})
}

func (s *Server) postAck(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.refuse(w, r, body, err)
		return
	}
	if isAckRecord(body) {
		s.submitRecord(w, r, body)
		return
	}
	var req AckRequest
	if err := decodeStrict(body, &req); err != nil {
		s.refuse(w, r, body, err)
		return
	}
	c := callerOf(r)
	as := req.As
	if as == "" && !c.open {
		as = c.role
	}
	var fields []amp.FieldError
	if req.MsgID == "" {
		fields = append(fields, amp.FieldError{Path: "msg_id", Problem: "is required"})
	}
	if as == "" {
		fields = append(fields, amp.FieldError{Path: "as", Problem: "is required"})
	}
	if len(fields) > 0 {
		s.refuse(w, r, body, invalidFields(fields))
		return
	}
	if !c.mayAct(as) {
		s.refuse(w, r, body, task.Errorf(task.CodeForbidden, "as: token %q has role %s and may not acknowledge as %s", c.name, c.role, as))
		return
	}
	res, err := s.tasks.Ack(agentContext(r), req.MsgID, as)
	if err != nil {
		s.refuse(w, r, body, err)
		return
	}
	s.accepted(w, res)
}

// isAckRecord reports whether body is an object with an ack_of key, the
// mark of an ACK record (as amp.ParseRecord reads it).
func isAckRecord(body []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return false
	}
	_, ok := obj["ack_of"]
	return ok
}

// refuse answers a refused agent input and, unless the refusal is ours
// (an outage or a bug) rather than the input's, keeps it in the SSOT
// error log. The task is untouched: the workflow refuses in its update
// validator, before anything reaches history.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, body []byte, err error) {
	te := asTaskError(err)
	if te.Code != task.CodeUnavailable && te.Code != task.CodeInternal {
		s.logRefusal(r, body, te)
	}
	s.writeError(w, r, err)
}

func (s *Server) logRefusal(r *http.Request, body []byte, te *task.Error) {
	reason := fmt.Sprintf("%s %s: %s: %s", r.Method, r.URL.Path, te.Code, te.Message)
	s.log.Warn("refused agent input", "path", r.URL.Path, "remote", r.RemoteAddr,
		"caller", callerOf(r).name, "code", te.Code, "reason", te.Message, "bytes", len(body))
	if s.store == nil {
		return
	}
	e := ssot.ErrorEntry{RecordedAt: s.now(), Source: errorSource, Reason: reason + " (from " + r.RemoteAddr + ")", Raw: string(body)}
	if err := s.store.AppendError(context.WithoutCancel(r.Context()), e); err != nil {
		s.log.Error("keeping refused input in the SSOT error log failed", "remote", r.RemoteAddr, "err", err)
	}
}

// postHeartbeat passes a sign of life on. Heartbeats are not AMP
// messages, so refusing one does not reach the error log.
func (s *Server) postHeartbeat(w http.ResponseWriter, r *http.Request) {
	var req HeartbeatRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	c := callerOf(r)
	if req.From == "" && !c.open {
		req.From = c.role
	}
	var fields []amp.FieldError
	if !task.ValidID(req.TaskID) {
		fields = append(fields, amp.FieldError{Path: "task_id", Problem: "must be T-YYYY-NNN"})
	}
	switch req.From {
	case amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator:
	case "":
		fields = append(fields, amp.FieldError{Path: "from", Problem: "is required when the API has no tokens (executor, reviewer or coordinator)"})
	default:
		fields = append(fields, amp.FieldError{Path: "from", Problem: "must be executor, reviewer or coordinator"})
	}
	if len(fields) > 0 {
		s.writeError(w, r, invalidFields(fields))
		return
	}
	if !c.mayAct(req.From) {
		s.writeError(w, r, task.Errorf(task.CodeForbidden, "from: token %q has role %s and may not send as %s", c.name, c.role, req.From))
		return
	}
	in := task.HeartbeatInput{From: req.From, Note: strings.TrimSpace(req.Note)}
	if err := in.Validate(); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.tasks.Heartbeat(agentContext(r), req.TaskID, in); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"ok": true})
}
