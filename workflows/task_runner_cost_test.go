package workflows

import (
	"math"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// rateLimitDispatches makes the first n dispatch deliveries fail as a
// runner that hit its vendor's limit, resetting after reset (none when 0).
func rateLimitDispatches(h *harness, n int, reset time.Duration) {
	failed := 0
	h.deliverErr = func(m amp.Message) error {
		if m.Type != amp.TypeTaskDispatch || failed >= n {
			return nil
		}
		failed++
		f := activities.DeliveryFailure{Summary: "the executor runner (codex) hit a rate limit on " + m.MsgID, Class: "rate_limit"}
		if reset > 0 {
			f.ResetAt = h.env.Now().Add(reset)
		}
		return temporal.NewNonRetryableApplicationError(f.Summary, activities.ErrRateLimited, nil, f)
	}
}

// TestRateLimit checks that a rate-limited delivery waits on a timer
// until the reset, or backs off, then is delivered again, with no
// question to the admins while it waits.
func TestRateLimit(t *testing.T) {
	t.Run("UntilReset", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		rateLimitDispatches(h, 1, 2*time.Hour)
		var waiting task.State
		h.at(time.Hour+30*time.Minute, func() { waiting = h.state() })
		h.round(2*time.Hour + 10*time.Second)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		if len(h.deliverAt) < 2 || h.delivered[1].Type != amp.TypeTaskDispatch || h.delivered[1].MsgID != h.delivered[0].MsgID {
			t.Fatalf("deliveries %v, want the same dispatch twice", h.delivered)
		}
		if got := h.deliverAt[1].Sub(h.deliverAt[0]); got < 2*time.Hour || got > 2*time.Hour+time.Minute {
			t.Errorf("delivered again after %s, want at the reset (2h)", got)
		}
		if waiting.Pending != nil {
			t.Errorf("a question while waiting out the limit: %+v", waiting.Pending)
		}
		if waiting.PausedUntil.IsZero() {
			t.Error("paused_until unset while waiting")
		}
		if !hasTimeline(waiting, "rate_limit") {
			t.Error("no rate_limit entry in the timeline")
		}
	})
	t.Run("BackedOff", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		rateLimitDispatches(h, 2, 0)
		h.round(7 * time.Minute)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		if len(h.deliverAt) < 3 {
			t.Fatalf("%d deliveries, want the dispatch three times", len(h.deliverAt))
		}
		for i, want := range []time.Duration{time.Minute, 5 * time.Minute} {
			if got := h.deliverAt[i+1].Sub(h.deliverAt[i]); got != want {
				t.Errorf("wait %d: %s, want %s", i+1, got, want)
			}
		}
	})
}

func TestRateLimitWait(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		reset time.Time
		n     int
		want  time.Duration
	}{
		{"Reset", now.Add(time.Hour), 3, time.Hour + 5*time.Second},
		{"ResetPast", now.Add(-time.Minute), 0, time.Minute},
		{"ResetFar", now.Add(72 * time.Hour), 0, maxRateLimitWait},
		{"First", time.Time{}, 0, time.Minute},
		{"Third", time.Time{}, 2, 15 * time.Minute},
		{"Capped", time.Time{}, 40, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := rateLimitWait(now, c.reset, c.n); got != c.want {
				t.Errorf("rateLimitWait = %s, want %s", got, c.want)
			}
		})
	}
}

func hasTimeline(st task.State, kind string) bool {
	for _, e := range st.Timeline {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

func withCap(usd float64) func(*task.Input) {
	return func(in *task.Input) { in.Policy.MaxCostUSD = map[amp.Role]float64{amp.RoleExecutor: usd} }
}

func (h *harness) usage(d time.Duration, in task.UsageInput) {
	h.at(d, func() { h.env.SignalWorkflow(task.SignalUsage, in) })
}

func optionIDs(st task.State) string {
	if st.Pending == nil {
		return ""
	}
	var ids []string
	for _, o := range st.Pending.Options {
		ids = append(ids, o.ID)
	}
	return strings.Join(ids, ",")
}

// TestRunnerBudget checks the task's cost cap: usage counted once per
// run, the remaining cap given to each delivery, and a run stopped at the
// cap or a role past it asking the admins to raise the cap or terminate.
func TestRunnerBudget(t *testing.T) {
	t.Run("StoppedThenRaised", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withCap(1))
		stopped := false
		h.deliverErr = func(m amp.Message) error {
			if m.Type != amp.TypeTaskDispatch || stopped {
				return nil
			}
			stopped = true
			f := activities.DeliveryFailure{Summary: "the executor runner (claude) reached the task's cost cap", Class: activities.FailureMaxCost}
			return temporal.NewNonRetryableApplicationError(f.Summary, activities.ErrDelivery, nil, f)
		}
		run := task.UsageInput{Key: "k1", From: amp.RoleExecutor, MsgID: "m", Runner: "claude", InputTokens: 1000, OutputTokens: 200, CostUSD: 1.2}
		h.usage(time.Second, run)
		h.usage(2*time.Second, run) // the same run again: counted once
		var asked task.State
		h.at(5*time.Second, func() {
			asked = h.state()
			h.decide("alice", task.OptRaiseCap, "")
		})
		h.round(6 * time.Second)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		if asked.Pending == nil || asked.Pending.Kind != task.KindDeliveryFailed || optionIDs(asked) != "raise_cap,terminate" {
			t.Fatalf("pending %+v, want delivery_failed with raise_cap, terminate", asked.Pending)
		}
		if math.Abs(asked.CostUSD-1.2) > 1e-9 || asked.Tokens != (task.Tokens{Input: 1000, Output: 200}) {
			t.Errorf("cost $%g, tokens %+v; want $1.2 and 1000/200 once", asked.CostUSD, asked.Tokens)
		}
		if first := h.deliverIns[0]; first.MaxCostUSD != 1 {
			t.Errorf("first delivery's cap $%g, want the whole $1", first.MaxCostUSD)
		}
		// Raised to what was spent plus one more cap: $1 left.
		if again := h.deliverIns[1]; again.Message.Type != amp.TypeTaskDispatch || math.Abs(again.MaxCostUSD-1) > 1e-9 {
			t.Errorf("redispatch %s with cap $%g, want a dispatch with $1 left", again.Message.Type, again.MaxCostUSD)
		}
	})
	t.Run("PastCapTerminated", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1", "S2"), withCap(1))
		h.usage(1500*time.Millisecond, task.UsageInput{Key: "k1", From: amp.RoleExecutor, MsgID: "m", Runner: "codex",
			SessionID: "s", SessionTotal: true, InputTokens: 100, OutputTokens: 10, CostUSD: 0.6})
		h.usage(1600*time.Millisecond, task.UsageInput{Key: "k2", From: amp.RoleExecutor, MsgID: "m", Runner: "codex",
			SessionID: "s", SessionTotal: true, InputTokens: 300, OutputTokens: 30, CostUSD: 1.5})
		h.round(0)
		var asked task.State
		h.at(10*time.Second, func() {
			asked = h.state()
			h.decide("alice", task.OptTerminate, "")
		})
		if res := h.run(); res.Status != task.StatusTerminated {
			t.Fatalf("status %s, want terminated", res.Status)
		}
		if optionIDs(asked) != "raise_cap,terminate" {
			t.Fatalf("pending %+v, want raise_cap, terminate", asked.Pending)
		}
		// The session's running total is charged once: $1.5, not $2.1.
		if math.Abs(asked.CostUSD-1.5) > 1e-9 || asked.Tokens != (task.Tokens{Input: 300, Output: 30}) {
			t.Errorf("cost $%g, tokens %+v; want the session's total once", asked.CostUSD, asked.Tokens)
		}
		if n := len(h.deliveredOf(amp.TypeTaskDispatch)); n != 1 {
			t.Errorf("%d dispatches delivered, want 1: the second is past the cap", n)
		}
		if len(asked.Spend) != 1 || asked.Spend[0].CapUSD != 1 || asked.Spend[0].Runs != 2 {
			t.Errorf("spend %+v, want the executor's 2 runs against a $1 cap", asked.Spend)
		}
	})
}
