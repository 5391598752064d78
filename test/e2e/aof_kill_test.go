package e2e

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestAOFKillBeforeSessionEnd kills `ampflow dev` between an agent's
// completion report and the session's end: after the restart the session
// end still applies the reported outcome, and a heartbeat that expired
// meanwhile is still judged stale.
func TestAOFKillBeforeSessionEnd(t *testing.T) {
	dataDir := t.TempDir()
	p := startDev(t, dataDir)
	c := newAPIClient(t, p.api, "")
	const id = "TASK-2026-02-09-070"
	c.create(id, map[string]any{"reviewRequired": false})
	c.dispatch(id, 600000)
	c.must(aofExample(t, "1", map[string]any{"taskId": id}))
	// A second run whose heartbeat expires while ampflow is down: its
	// durable timer fires after the restart.
	const stale = "TASK-2026-02-09-071"
	c.create(stale, nil)
	c.dispatch(stale, 3000)

	p.kill()
	p.restart()
	c.reset()

	eventually(t, 60*time.Second, "the task answers after the restart", func() (bool, error) {
		code, _, err := c.raw("GET", "/v1/aof/tasks/"+id, nil)
		return code == http.StatusOK, err
	})
	c.sessionEnd()
	c.waitStatus(id, "done", 60*time.Second)
	var trans []string
	for _, e := range c.events(id) {
		if e.Type == "task.transitioned" {
			trans = append(trans, e.Payload["from"].(string)+">"+e.Payload["to"].(string)+":"+e.Payload["reason"].(string))
		}
	}
	want := []string{"ready>in_progress:dispatched to swe-backend", "in_progress>review:session_end_done", "review>done:session_end_done"}
	if !slices.Equal(trans, want) {
		t.Errorf("transitions %v, want %v", trans, want)
	}
	if n := c.countEvents(id, "task.completed"); n != 1 {
		t.Errorf("%d task.completed events, want 1", n)
	}
	c.waitStatus(stale, "ready", 60*time.Second)
	wantReason(t, c.lastEvent(stale, "task.transitioned"), "stale_heartbeat_reclaim")
}
