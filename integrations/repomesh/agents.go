package repomesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
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

// Bounds of a recovered or inactive heartbeat: it sends again at most
// MaxRedispatched of the agent's tasks, and an agent's next one within
// RecoverEvery (per worker) is refused with 429 rate_limited and
// Retry-After, having done nothing.
const (
	MaxRedispatched = 50
	RecoverEvery    = time.Minute
)

// recoveries keeps when each agent last reported a restart.
type recoveries struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// admit records agent's report at now, or says how long until it may
// report again.
func (rc *recoveries) admit(agent string, now time.Time) time.Duration {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if wait := rc.last[agent].Add(RecoverEvery).Sub(now); wait > 0 {
		return wait
	}
	for a, at := range rc.last {
		if !now.Before(at.Add(RecoverEvery)) {
			delete(rc.last, a)
		}
	}
	if rc.last == nil {
		rc.last = map[string]time.Time{}
	}
	rc.last[agent] = now
	return 0
}

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
		a.srv.Error(w, r, httpapi.InvalidField("id", trimField(err)))
		return
	}
	if !mayActAs(httpapi.CallerOf(r), agent) {
		a.denied(w, r, "agent.heartbeat", agent)
		return
	}
	out := AgentHeartbeatResponse{AgentID: agent, Status: in.Status, Released: []string{}, Redispatched: []string{}}
	c := httpapi.CallerOf(r)
	if !slices.Contains(heartbeatRoles, in.Role) {
		a.srv.Error(w, r, httpapi.InvalidField("role", "must be executor, reviewer, coordinator or admin (or empty: the token's role)"))
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
	self := !c.Open && slices.Contains(selfNames(c), agent) // by name or id
	if in.Role == "" && self {
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
		a.srv.Error(w, r, httpapi.InvalidField("status", "must be active, inactive or recovered"))
		return
	}
	key, names := agent, []string{agent}
	if self {
		key, names = c.Name, selfNames(c)
	}
	if wait := a.recovered.admit(key, a.now()); wait > 0 {
		secs := int64((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		a.srv.Error(w, r, task.Errorf(task.CodeRateLimited, "%s reported %s less than %s ago: try again in %d s",
			agent, in.Status, RecoverEvery, secs))
		return
	}
	released, err := a.releaseAll(r, agent, reason)
	out.Released = append(out.Released, released...)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	redispatched, err := a.redispatch(r, names, in.Role)
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

// redispatch tells each task delivered to one of names as role, and
// still waiting for role, that its agent restarted: the task sends its
// message again at once (see task.HeartbeatInput). Another agent's tasks
// are not touched; tasks that ended meanwhile are skipped.
func (a *API) redispatch(r *http.Request, names []string, role amp.Role) ([]string, error) {
	var statuses []task.Status
	switch role {
	case amp.RoleExecutor:
		statuses = []task.Status{task.StatusDispatched, task.StatusInProgress}
	case amp.RoleReviewer:
		statuses = []task.Status{task.StatusInReview}
	}
	ids := []string{}
	if a.tasks == nil || len(statuses) == 0 {
		return ids, nil
	}
	delivered, err := a.deliveredTasks(r.Context(), names, role)
	if err != nil {
		return ids, err
	}
	for _, id := range delivered {
		if len(ids) >= MaxRedispatched {
			break
		}
		st, err := a.store.Task(r.Context(), id)
		switch {
		case errors.Is(err, ssot.ErrNotFound):
			continue
		case err != nil:
			return ids, storeError(err, "task "+id)
		case !slices.Contains(statuses, turnOf(st)):
			continue
		}
		err = a.tasks.Heartbeat(r.Context(), id, task.HeartbeatInput{From: role, Note: RecoveredMessage, Recovered: true})
		var te *task.Error
		switch {
		case err == nil:
			ids = append(ids, id)
		case errors.As(err, &te) && (te.Code == task.CodeFinished || te.Code == task.CodeNotFound):
		default:
			return ids, err
		}
	}
	return ids, nil
}

// turnOf is the turn a stored task is in: its status, or the turn under
// an awaiting_admin that an open decision reports (task.State.Underlying).
func turnOf(st ssot.TaskState) task.Status {
	var v struct {
		Turn task.Status `json:"underlying_status"`
	}
	if json.Unmarshal(st.State, &v) == nil && v.Turn != "" {
		return v.Turn
	}
	return task.Status(st.Status)
}
