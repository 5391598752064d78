package repomesh

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Claims: a task.claimed event is a claim on its task, held as the lease
// task:<task_id> for payload.agent_id with payload.lease_ttl as its TTL
// (DefaultClaimTTL when 0). The claimer claiming again renews it; another
// agent's claim while it holds is refused with 409 TASK_CLAIM_CONFLICT
// and an agent.error, retry_after_ms ClaimRetryAfter (the document's
// fixed 2 s for a task claim conflict). A claim ends with its TTL, or
// when its holder releases the lease (DELETE /v1/leases/{id}).
const (
	DefaultClaimTTL = 5 * time.Minute
	ClaimRetryAfter = 2 * time.Second
)

// ClaimKey is the lease key of a claim on taskID.
func ClaimKey(taskID string) string { return "task:" + taskID }

// claim takes the claim a task.claimed event makes; false means the
// answer was written (refused, or the lease workflows unreachable).
func (a *API) claim(w http.ResponseWriter, r *http.Request, ev checked) bool {
	taskID, _ := ev.payload["task_id"].(string)
	agent, _ := ev.payload["agent_id"].(string)
	if !mayActAs(httpapi.CallerOf(r), agent) {
		a.denied(w, r, "task.claim", agent)
		return false
	}
	if a.noLeases(w, r) {
		return false
	}
	ttl := DefaultClaimTTL
	if n, ok := ev.payload["lease_ttl"].(float64); ok && n > 0 {
		ttl = time.Duration(n) * time.Second
	}
	ttl = min(max(ttl, lease.MinTTL), lease.MaxTTL)
	key := ClaimKey(taskID)
	if err := lease.CheckKey(key); err != nil {
		a.refuse(w, r, httpapi.InvalidField("payload.task_id", trimField(err)))
		return false
	}
	res, err := a.leases.Acquire(r.Context(), key, lease.AcquireRequest{AgentID: agent, TTLSeconds: int(ttl / time.Second)})
	if err != nil {
		a.srv.Error(w, r, leaseError(err))
		return false
	}
	if cf := res.Conflict; cf != nil {
		msg := fmt.Sprintf("task %s is claimed by %s", taskID, cf.Holder)
		retry := ClaimRetryAfter.Milliseconds()
		a.tellError(r, "task.claim", CodeTaskClaimConflict, msg, retry, map[string]any{"holder": cf.Holder, "task_id": taskID})
		w.Header().Set("Retry-After", strconv.FormatInt(retry/1000, 10))
		httpapi.WriteJSON(w, http.StatusConflict, ConflictBody{ConflictDetail{Code: CodeTaskClaimConflict, Message: msg,
			Holder: cf.Holder, RetryAfterMS: retry}})
		return false
	}
	return true
}
