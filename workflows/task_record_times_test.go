package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TestRecordTimes: every SSOT record carries the time it happened, not
// the time of what it answers: an ACK its own, not the acknowledged
// message's; a decision's outcome the time it was decided, not raised.
func TestRecordTimes(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskHigh, "S1")) // plan and final approval by an admin
	const (
		planDecided = time.Hour
		ackAt       = planDecided + 90*time.Second
		verdictAt   = ackAt + 30*time.Second
		finalAt     = 2 * time.Hour
	)
	h.at(planDecided, func() { h.decide("alice", decision.OptApprove, "") })
	h.at(ackAt, func() { h.ack(amp.RoleExecutor) })
	h.at(ackAt+10*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(ackAt+20*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(verdictAt, func() { h.verdict(amp.DecisionApproved, 0.95) })
	h.at(finalAt, func() { h.decide("bob", decision.OptApprove, "") })
	res := h.run()
	if res.Status != task.StatusDone {
		t.Fatalf("task %s, want done", res.Status)
	}
	start := h.state().StartedAt

	at := map[string]time.Time{} // what happened → the time its record shows
	h.mu.Lock()
	for _, r := range h.records {
		switch r.Kind {
		case ssot.KindAck:
			var a amp.Ack
			if err := json.Unmarshal(r.Body, &a); err != nil {
				t.Fatal(err)
			}
			at["ack by "+string(a.From)] = r.RecordedAt
		case ssot.KindDecision:
			at[r.ID] = r.RecordedAt
		}
	}
	h.mu.Unlock()
	for what, want := range map[string]time.Duration{
		"ack by executor":          ackAt,
		"ack by reviewer":          ackAt + 20*time.Second,
		testTaskID + "-d1":         0,
		testTaskID + "-d1-outcome": planDecided,
		testTaskID + "-d2":         verdictAt,
		testTaskID + "-d2-outcome": finalAt,
	} {
		got, ok := at[what]
		if !ok {
			t.Errorf("no record of %s; have %v", what, at)
			continue
		}
		if d := got.Sub(start); d != want {
			t.Errorf("record of %s shows start+%s, want start+%s", what, d, want)
		}
	}
}
