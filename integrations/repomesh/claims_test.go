package repomesh

import (
	"encoding/json"
	"strings"
	"testing"
)

func claimed(agent string, ttl int) string {
	b, _ := json.Marshal(map[string]any{"type": "task.claimed", "severity": "info",
		"payload": map[string]any{"task_id": "T-2026-777", "agent_id": agent, "lease_ttl": ttl}})
	return string(b)
}

func TestTaskClaims(t *testing.T) {
	h := newHarness(t)
	h.do(t, "POST", "/v1/events", aliceToken, claimed("alice", 60)).want(t, 201, nil)
	if l := h.leases.Held(ClaimKey("T-2026-777")); l == nil || l.AgentID != "alice" || l.TTLSeconds != 60 {
		t.Fatalf("alice's claim holds %+v, want task:T-2026-777 for 60s", l)
	}

	t.Run("SecondClaimConflicts", func(t *testing.T) {
		var c ConflictBody
		h.do(t, "POST", "/v1/events", bobToken, claimed("bob", 60)).want(t, 409, &c)
		if c.Error.Code != CodeTaskClaimConflict || c.Error.Holder != "alice" || c.Error.RetryAfterMS != 2000 {
			t.Fatalf("conflict %+v", c)
		}
		var errs EventList
		h.do(t, "GET", "/v1/events/inbox", bobToken, "").want(t, 200, &errs)
		if len(errs.Events) != 1 || errs.Events[0].Type != TypeError ||
			!strings.Contains(string(errs.Events[0].Payload), `"error_code":"TASK_CLAIM_CONFLICT"`) ||
			!strings.Contains(string(errs.Events[0].Payload), `"retry_after_ms":2000`) {
			t.Fatalf("bob's agent.error: %+v", errs.Events)
		}
		var found EventList
		h.do(t, "GET", "/v1/events/search?type=task.claimed&task_id=T-2026-777", adminToken, "").want(t, 200, &found)
		if len(found.Events) != 1 {
			t.Fatalf("task.claimed events %+v, want alice's only", found.Events)
		}
	})

	t.Run("ClaimerClaimsAgain", func(t *testing.T) {
		h.do(t, "POST", "/v1/events", aliceToken, claimed("alice", 0)).want(t, 201, nil)
		if l := h.leases.Held(ClaimKey("T-2026-777")); l.AgentID != "alice" || l.TTLSeconds != int(DefaultClaimTTL.Seconds()) {
			t.Fatalf("renewed claim %+v", l)
		}
	})

	t.Run("OnlyAsItself", func(t *testing.T) {
		h.do(t, "POST", "/v1/events", bobToken, claimed("alice", 60)).want(t, 403, nil)
	})
}
