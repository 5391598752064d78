package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/repomesh"
)

// TestLeaseKillAndRestart takes a lease, held in the SSOT, and kills
// `ampflow dev` with SIGKILL while it is held: the restarted worker wakes
// the lease sweeper, which ends the lease at (or, when the restart took
// longer, right after) its expiry, and the key is free for another.
func TestLeaseKillAndRestart(t *testing.T) {
	p := startDev(t, t.TempDir(),
		"AMPFLOW_AUTH_TOKENS=alice-secret-0123456789ab:executor:alice,bob-secret-0123456789ab:executor:bob")
	alice := newAPIClient(t, p.api, "alice-secret-0123456789ab")
	var l repomesh.Lease
	if code := alice.do("POST", "/v1/leases", map[string]any{"resource_key": "file:kill:main", "ttl_seconds": 10}, &l); code != 201 {
		t.Fatalf("alice's acquire: %d", code)
	}
	bob := newAPIClient(t, p.api, "bob-secret-0123456789ab")
	var conflict repomesh.ConflictBody
	code, body := bob.call("POST", "/v1/leases", []byte(`{"resource_key":"file:kill:main","ttl_seconds":30}`), nil)
	if err := json.Unmarshal(body, &conflict); code != 409 || err != nil || conflict.Error.Holder != "alice" || conflict.Error.RetryAfterMS <= 0 {
		t.Fatalf("bob's acquire while alice holds: %d %s", code, body)
	}

	p.kill()
	t.Log("ampflow dev killed with SIGKILL; restarting")
	p.restart()
	alice.base, bob.base = "http://"+p.api, "http://"+p.api

	var ended repomesh.Lease
	eventually(t, 2*time.Minute, "the lease auto-released after the restart", func() (bool, error) {
		var list repomesh.LeaseList
		alice.do("GET", "/v1/leases?agent_id=alice&limit=1", nil, &list)
		if len(list.Leases) == 1 && list.Leases[0].LeaseID == l.LeaseID && list.Leases[0].State == "expired" {
			ended = list.Leases[0]
			return true, nil
		}
		return false, fmt.Errorf("leases %+v", list.Leases)
	})
	if ended.Reason != "expired" || ended.ReleasedAt.Before(l.ExpiresAt) {
		t.Fatalf("ended lease %+v, want expired no earlier than %s", ended, l.ExpiresAt)
	}
	t.Logf("expired at %s, auto-released at %s", l.ExpiresAt, ended.ReleasedAt)
	var next repomesh.Lease
	if code := bob.do("POST", "/v1/leases", map[string]any{"resource_key": "file:kill:main", "ttl_seconds": 30}, &next); code != 201 || next.AgentID != "bob" {
		t.Fatalf("bob's acquire after the expiry: %d %+v", code, next)
	}
}
