package repomesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows/lease"
	"github.com/ampflow/ampflow/workflows/task"
)

// Agent statuses of an agent heartbeat.
const (
	AgentActive    = "active"
	AgentInactive  = "inactive"
	AgentRecovered = "recovered"
)

// RecoveredMessage is the agent.chat a recovered agent's heartbeat echoes
// in the mesh, as the document's recovery procedure has the agent say.
const RecoveredMessage = "recovered from crash, resuming work"

// AgentHeartbeatRequest is POST /v1/agents/{id}/heartbeat.
type AgentHeartbeatRequest struct {
	Status string `json:"status"`
	// Role is the agent's AMP role (executor or reviewer), whose waiting
	// tasks send their message again; empty is the caller's token role
	// when the caller is the agent.
	Role amp.Role `json:"role,omitempty"`
}

// AgentHeartbeatResponse says what the heartbeat did.
type AgentHeartbeatResponse struct {
	AgentID string `json:"agent_id"`
	Status  string `json:"status"`
	// Released are the leases the heartbeat released (recovered or
	// inactive).
	Released []string `json:"released"`
	// Redispatched are the tasks that were waiting for the agent's role
	// and send their message again (recovered or inactive).
	Redispatched []string `json:"redispatched"`
	// EventID is the recovery echo's event; empty unless recovered.
	EventID string `json:"event_id,omitempty"`
}

// heartbeatRoles are the roles a heartbeat's body may name; empty is the
// token's.
var heartbeatRoles = []amp.Role{"", amp.RoleExecutor, amp.RoleReviewer, amp.RoleCoordinator, amp.RoleAdmin}

// maxRedispatched bounds the tasks one heartbeat redispatches.
const maxRedispatched = ssot.MaxLimit

// maxReleased bounds the leases one heartbeat releases.
const maxReleased = 10 * ssot.MaxLimit

func (a *API) agentHeartbeat(w http.ResponseWriter, r *http.Request) {
	if a.unavailable(w, r) || a.noLeases(w, r) {
		return
	}
	var in AgentHeartbeatRequest
	if err := a.srv.Decode(w, r, &in); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	agent := r.PathValue("id")
	if err := lease.CheckAgent(agent); err != nil {
		a.srv.Error(w, r, invalid("id", trimField(err)))
		return
	}
	if !mayActAs(httpapi.CallerOf(r), agent) {
		a.denied(w, r, "agent.heartbeat", agent)
		return
	}
	out := AgentHeartbeatResponse{AgentID: agent, Status: in.Status, Released: []string{}, Redispatched: []string{}}
	c := httpapi.CallerOf(r)
	if !slices.Contains(heartbeatRoles, in.Role) {
		a.srv.Error(w, r, invalid("role", "must be executor, reviewer, coordinator or admin (or empty: the token's role)"))
		return
	}
	if in.Role != "" && in.Role != c.Role && !isAdmin(c) {
		// The role picks the tasks redispatched: an agent speaks only for
		// its token's.
		msg := fmt.Sprintf("%s's token is %s's: it may not speak as %s", c.Name, c.Role, in.Role)
		a.tellError(r, "agent.heartbeat", CodePermissionDenied, msg, 0, nil)
		a.srv.Error(w, r, &task.Error{Code: CodePermissionDenied, Message: msg})
		return
	}
	if in.Role == "" && c.Name == agent && !c.Open {
		in.Role = c.Role
	}
	var reason string
	switch in.Status {
	case AgentActive:
		httpapi.WriteJSON(w, http.StatusOK, out)
		return
	case AgentInactive:
		reason = lease.ReasonAgentInactive
	case AgentRecovered:
		reason = lease.ReasonAgentRecovered
	default:
		a.srv.Error(w, r, invalid("status", "must be active, inactive or recovered"))
		return
	}
	released, err := a.releaseAll(r, agent, reason)
	out.Released = append(out.Released, released...)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	redispatched, err := a.redispatch(r, in.Role)
	out.Redispatched = append(out.Redispatched, redispatched...)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if in.Status == AgentRecovered {
		now := a.now()
		payload, _ := json.Marshal(map[string]any{"from": agent, "from_id": agent, "to": "all",
			"subject": "Recovered", "content": RecoveredMessage, "timestamp": now.UTC(),
			"metadata": map[string]any{"released_leases": out.Released, "redispatched_tasks": out.Redispatched}})
		e, err := a.store.AppendEvent(r.Context(), ssot.MeshEvent{ID: newID(ssot.SystemEventPrefix + "E"), Type: TypeChat, Severity: "info",
			AgentID: agent, From: agent, FromID: agent, To: "all", Subject: "Recovered", Content: RecoveredMessage,
			CreatedAt: now, Payload: payload})
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		out.EventID = e.ID
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// releaseAll releases every active lease agent holds, as the store lists
// them; a lease that ended meanwhile is skipped.
func (a *API) releaseAll(r *http.Request, agent, reason string) ([]string, error) {
	var ids []string
	cursor := ""
	for len(ids) < maxReleased {
		rows, next, err := a.store.Leases(r.Context(), ssot.LeaseFilter{AgentID: agent, State: lease.StateActive},
			ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			return ids, storeError(err, "leases")
		}
		for _, l := range rows {
			_, err := a.leases.Release(r.Context(), lease.ReleaseRequest{LeaseID: l.LeaseID, AgentID: agent, Reason: reason})
			var ref *lease.RefusedError
			switch {
			case err == nil:
				ids = append(ids, l.LeaseID)
			case errors.As(err, &ref) && ref.Type == lease.ErrNotHeld:
			default:
				return ids, leaseError(err)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return ids, nil
}

// redispatch tells every task waiting for role that its agent restarted:
// the task sends its message again at once (see task.HeartbeatInput).
// Tasks that ended meanwhile are skipped.
func (a *API) redispatch(r *http.Request, role amp.Role) ([]string, error) {
	var statuses []task.Status
	switch role {
	case amp.RoleExecutor:
		statuses = []task.Status{task.StatusDispatched, task.StatusInProgress}
	case amp.RoleReviewer:
		statuses = []task.Status{task.StatusInReview}
	}
	if a.tasks == nil || len(statuses) == 0 {
		return []string{}, nil
	}
	ids := []string{}
	for _, st := range statuses {
		cursor := ""
		for len(ids) < maxRedispatched {
			rows, next, err := a.store.TaskList(r.Context(), ssot.TaskFilter{Status: string(st)}, ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
			if err != nil {
				return ids, storeError(err, "tasks")
			}
			for _, t := range rows {
				err := a.tasks.Heartbeat(r.Context(), t.TaskID, task.HeartbeatInput{From: role, Note: RecoveredMessage, Recovered: true})
				var te *task.Error
				switch {
				case err == nil:
					ids = append(ids, t.TaskID)
				case errors.As(err, &te) && (te.Code == task.CodeFinished || te.Code == task.CodeNotFound):
				default:
					return ids, err
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return ids, nil
}
