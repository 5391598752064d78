package decide

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// errorLog keeps what VerifyAnswer refuses.
type errorLog struct{ entries []ssot.ErrorEntry }

func (l *errorLog) AppendError(_ context.Context, e ssot.ErrorEntry) error {
	l.entries = append(l.entries, e)
	return nil
}

// TestVerify: the engine takes an answer only when it is signed with the
// worker's decision key; anything else, however admin its by, is refused
// as forbidden, kept in the error log, and leaves the decision open.
func TestVerify(t *testing.T) {
	refused := []struct {
		name   string
		answer func(d decision.Decision) decision.Answer
		says   string
	}{
		{"Unsigned", func(d decision.Decision) decision.Answer {
			return decision.Answer{DecisionID: d.ID, Digest: d.Digest, Option: decision.OptApprove, By: "alice", Channel: "cli"}
		}, "not signed"},
		{"Altered", func(d decision.Decision) decision.Answer {
			a := signed(decision.Answer{DecisionID: d.ID, Digest: d.Digest, Option: decision.OptReject, By: "mallory", Channel: "cli"})
			a.By = "alice"
			return a
		}, "does not match"},
		{"OtherKey", func(d decision.Decision) decision.Answer {
			a := decision.Answer{DecisionID: d.ID, Digest: d.Digest, Option: decision.OptApprove, By: "alice", Channel: "cli", At: time.Now()}
			a.Signature = decision.SignAnswer([]byte(strings.Repeat("m", decision.MinKeySize)), "T-1", a)
			return a
		}, "does not match"},
		{"Stale", func(d decision.Decision) decision.Answer {
			a := decision.Answer{DecisionID: d.ID, Digest: d.Digest, Option: decision.OptApprove, By: "alice", Channel: "cli",
				At: time.Now().Add(-decision.AnswerMaxAge - time.Minute)}
			a.Signature = decision.SignAnswer(testKey, "T-1", a)
			return a
		}, "out of bounds"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			r, log := newRun(t), &errorLog{}
			r.env.RegisterActivity(&activities.Activities{DecisionKey: testKey, Refusals: log})
			var forged, taken *answered
			var mid probeState
			r.at(time.Minute, func() { forged = r.send(c.answer(*r.state().Engine.Open)) })
			r.at(2*time.Minute, func() {
				mid = r.state()
				taken = r.answer("alice", decision.OptApprove)
			})
			s := r.finish(probeInput{Subject: "T-1"})
			refusedAs(t, forged, task.CodeForbidden, c.says)
			if mid.Engine.Open == nil || mid.Engine.Open.ID != "T-1-d1" || len(mid.Engine.Decided) != 0 {
				t.Errorf("after the refused answer: open %+v, decided %+v; want T-1-d1 still open", mid.Engine.Open, mid.Engine.Decided)
			}
			if taken.err != nil || taken.reply.Outcome == nil || taken.reply.Outcome.By != "alice" {
				t.Errorf("signed answer: %+v, %v; want it taken", taken.reply, taken.err)
			}
			if len(s.Engine.Decided) != 1 || s.Engine.Decided[0].Option != decision.OptApprove {
				t.Errorf("decided %+v, want one approval", s.Engine.Decided)
			}
			if len(log.entries) != 1 || log.entries[0].Source != activities.ErrorSourceDecide || !strings.Contains(log.entries[0].Reason, "T-1-d1") {
				t.Errorf("error log %+v, want the refused answer to T-1-d1", log.entries)
			}
		})
	}
	t.Run("NoKey", func(t *testing.T) {
		r := newRun(t)
		r.env.RegisterActivity(&activities.Activities{})
		var a *answered
		r.at(time.Minute, func() { a = r.answer("alice", decision.OptApprove) })
		r.at(2*time.Minute, func() { r.env.CancelWorkflow() })
		r.env.ExecuteWorkflow(probe, probeInput{Subject: "T-1"})
		refusedAs(t, a, task.CodeForbidden, "no decision key")
	})
}
