package aof

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// withAgentReviews has the harness's task reviewed by the reviewer agent,
// whose reviews answer with the verdicts given, in order (nil: no answer).
func (h *harness) withAgentReviews(verdicts ...*amp.ReviewVerdict) *[]AgentReviewInput {
	h.in.Reviewer = &AgentReviewer{Repo: "/src/app", Branch: "aof/users"}
	h.policy.MinConfidence = 0.7
	var mu sync.Mutex
	var started []AgentReviewInput
	h.env.RegisterWorkflowWithOptions(AgentReviewWorkflow, RegisterAgentReviewOptions())
	h.env.OnWorkflow(AgentReviewType, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in AgentReviewInput) (AgentVerdict, error) {
			mu.Lock()
			defer mu.Unlock()
			started = append(started, in)
			v := AgentVerdict{ID: in.ID}
			if n := len(started) - 1; n < len(verdicts) && verdicts[n] != nil {
				v.MsgID, v.Verdict = "review_verdict-"+in.ID, verdicts[n]
			} else {
				v.NoAnswer = "the reviewer agent did not ACK review_request-x within 30m"
			}
			return v, nil
		})
	return &started
}

func verdict(d amp.Decision, confidence float64, issues ...amp.Issue) *amp.ReviewVerdict {
	return &amp.ReviewVerdict{Decision: d, Confidence: confidence, Issues: issues}
}

// reviewRound completes the harness's task at start and ends the session.
func (h *harness) reviewRound(start time.Duration) {
	h.at(start, func() { h.dispatch(0) })
	h.at(start+time.Minute, func() { h.send(completion(OutcomeDone, t0), 0) })
	h.at(start+2*time.Minute, func() { h.update(UpdateSessionEnd, SessionEndInput{}) })
}

// TestAgentReview: with aof.review: agent, a task in review goes to the
// reviewer agent, a round at a time: a rejection sends it back to ready
// with the issues in its work log, an approval makes it done; no admin
// decision is raised.
func TestAgentReview(t *testing.T) {
	h := newHarness(t)
	started := h.withAgentReviews(
		verdict(amp.DecisionRejected, 0.9, amp.Issue{Severity: amp.SeverityMajor, File: "src/api/users.ts", Line: 12, Description: "no auth check", SuggestedFix: "call requireAuth"}),
		verdict(amp.DecisionApproved, 0.95, amp.Issue{Severity: amp.SeverityMinor, File: "src/api/users.ts", Line: 3, Description: "unused import"}))
	h.reviewRound(time.Second)
	h.at(10*time.Minute, func() {
		tk := h.task()
		if tk.Status != StatusReady || tk.Review != nil {
			t.Fatalf("after the rejection: status %s review %v", tk.Status, tk.Review)
		}
		if n := len(tk.WorkLog); n == 0 || !strings.Contains(tk.WorkLog[n-1], "sent back by the reviewer agent (T-2026-0209057001): [major] src/api/users.ts:12 no auth check (suggested: call requireAuth)") {
			t.Errorf("work log %q", tk.WorkLog)
		}
		if a := tk.AgentReview; a == nil || a.AMPTaskID != "T-2026-0209057001" || a.Round != 1 || a.Running {
			t.Errorf("agent review %+v", a)
		}
	})
	h.reviewRound(20 * time.Minute)
	h.run()
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the approved task's workflow did not end")
	}
	var done Task
	if err := h.env.GetWorkflowResult(&done); err != nil {
		t.Fatal(err)
	}
	if n := len(done.WorkLog); n == 0 || !strings.Contains(done.WorkLog[n-1], "approved by the reviewer agent (T-2026-0209057002): [minor] src/api/users.ts:3 unused import") {
		t.Errorf("work log %q: the approval's issue is not kept", done.WorkLog)
	}
	if a := done.AgentReview; a == nil || a.Outcome != "approved" || a.Rejections != 1 || a.LastVerdict == "" {
		t.Errorf("agent review %+v", a)
	}
	if len(*started) != 2 || (*started)[0].ID != "T-2026-0209057001" || (*started)[1].ID != "T-2026-0209057002" {
		t.Fatalf("reviews started %+v", *started)
	}
	if second := (*started)[1]; second.RejectCount != 1 || second.LastVerdict != "review_verdict-T-2026-0209057001" || second.MaxRejects != h.policy.MaxRejects {
		t.Errorf("the second review was given reject count %d, last verdict %q", second.RejectCount, second.LastVerdict)
	}
	in := (*started)[0]
	if in.Task.Result == nil || in.Task.Result.Outcome != OutcomeDone || in.Reviewer.Branch != "aof/users" || in.AckTimeout <= 0 || in.ReplyTimeout <= 0 {
		t.Errorf("the review was given %+v", in)
	}
	want := []string{
		"ready>in_progress:dispatched to swe-backend", "in_progress>review:session_end_done",
		"review>ready:rejected by the reviewer agent (T-2026-0209057001)",
		"ready>in_progress:dispatched to swe-backend", "in_progress>review:session_end_done",
		"review>done:approved by the reviewer agent (T-2026-0209057002)",
	}
	if got := h.transitions(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transitions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(h.eventsOf(EventReviewVerdict)); n != 2 {
		t.Errorf("%d review.verdict events, want 2", n)
	}
	for _, s := range h.saves {
		if len(s.Decisions) != 0 {
			t.Fatalf("an admin decision was raised: %+v", s.Decisions)
		}
	}
	for _, e := range h.eventsOf(EventTaskTransitioned) {
		if p := payloadOf(t, e); strings.Contains(p["reason"].(string), "reviewer agent") && e.Actor != "reviewer" {
			t.Errorf("the reviewer's transition has actor %q", e.Actor)
		}
	}
}

// TestAgentReviewFallback: the admins review instead, with the reason
// in their decision, when the reviewer gives no verdict, one less sure
// than min_confidence, or a rejection past max_rejects, and when the
// agent reported needs_review (a human review); their answer decides.
func TestAgentReviewFallback(t *testing.T) {
	for _, c := range []struct {
		name     string
		verdicts []*amp.ReviewVerdict
		outcome  Outcome
		rounds   int
		why      string
	}{
		{"NoAnswer", []*amp.ReviewVerdict{nil}, OutcomeDone, 1, "did not ACK"},
		{"LowConfidence", []*amp.ReviewVerdict{verdict(amp.DecisionApproved, 0.4, amp.Issue{Severity: amp.SeverityMinor, File: "a.go", Line: 1, Description: "typo"})},
			OutcomeDone, 1, "below protocol.min_confidence 0.70; [minor] a.go:1 typo"},
		{"MaxRejects", []*amp.ReviewVerdict{
			verdict(amp.DecisionRejected, 0.9, amp.Issue{Severity: amp.SeverityMajor, File: "a.go", Line: 1, Description: "no tests"}),
			verdict(amp.DecisionRejected, 0.9, amp.Issue{Severity: amp.SeverityMajor, File: "a.go", Line: 2, Description: "still no tests"})},
			OutcomeDone, 2, "rejected the work 2 times, more than protocol.max_rejects (1); [major] a.go:2 still no tests"},
		{"NeedsReview", nil, OutcomeNeedsReview, 1, "the agent reported needs_review"},
		{"Partial", nil, OutcomePartial, 1, "the agent reported partial"},
		{"NoReport", nil, "", 1, "the task has no completion report"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			started := h.withAgentReviews(c.verdicts...)
			h.policy.MaxRejects = 1
			for i := range c.rounds {
				start := time.Duration(i) * 20 * time.Minute
				h.at(start+time.Second, func() { h.dispatch(0) })
				h.at(start+time.Minute, func() {
					if c.outcome != "" {
						h.send(completion(c.outcome, t0), 0)
						return
					}
					m := msg(TypeStatusUpdate, t0)
					m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Status: StatusReview, Notes: "please look"}
					h.send(m, 0)
				})
				h.at(start+2*time.Minute, func() { h.update(UpdateSessionEnd, SessionEndInput{}) })
			}
			var dec *reply
			at := time.Duration(c.rounds-1)*20*time.Minute + 10*time.Minute
			h.at(at, func() {
				tk := h.task()
				d := tk.Review
				if tk.Status != StatusReview || d == nil {
					t.Fatalf("status %s, review %v: no admin decision", tk.Status, d)
				}
				why, _ := d.Context.Extra["reviewer_agent"].(string)
				if !strings.Contains(why, c.why) {
					t.Errorf("the decision says %q of the reviewer agent, want %q", why, c.why)
				}
				if a := tk.AgentReview; a == nil || a.Outcome != OutcomeNoVerdict || a.Fallback != why || (a.AMPTaskID == "") != (len(c.verdicts) == 0) {
					t.Errorf("agent review %+v", a)
				}
				if len(h.eventsOf(EventReviewNoVerdict)) != 1 {
					t.Errorf("no review.no_verdict event")
				}
				dec = h.update(task.UpdateDecide, decision.Answer{DecisionID: d.ID, Option: OptBlock, Note: "needs a human", By: "alice", Digest: d.Digest})
			})
			h.at(at+time.Minute, func() {
				if !dec.done || dec.err != nil {
					t.Fatalf("decide: %v", dec.err)
				}
				if tk := h.task(); tk.Status != StatusBlocked || (tk.AgentReview != nil && tk.AgentReview.Fallback != "") {
					t.Errorf("status %s, agent review %+v after the admins blocked it", tk.Status, tk.AgentReview)
				}
			})
			h.run()
			if n := len(*started); n != len(c.verdicts) {
				t.Errorf("%d reviews started, want %d", n, len(c.verdicts))
			}
		})
	}
}

// TestAgentReviewEnded: a task that leaves review while the reviewer
// agent's review waits (its handoff is rejected) ends that review, which
// clears the reviewer's inbox; the next review is a new round.
func TestAgentReviewEnded(t *testing.T) {
	h := newHarness(t)
	h.in.Reviewer = &AgentReviewer{Repo: "/src/app", Branch: "aof/users"}
	h.env.RegisterWorkflowWithOptions(AgentReviewWorkflow, RegisterAgentReviewOptions())
	var mu sync.Mutex
	var saves []aofacts.AgentReviewSaveInput
	var acts *activities.Activities
	var aofActs *aofacts.AOF
	h.env.OnActivity(aofActs.SaveAgentReview, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in aofacts.AgentReviewSaveInput) (aofacts.AgentReviewSaveResult, error) {
			mu.Lock()
			defer mu.Unlock()
			saves = append(saves, in)
			return aofacts.AgentReviewSaveResult{}, nil
		})
	h.env.OnActivity(acts.Deliver, mock.Anything, mock.Anything).Return(activities.DeliverResult{Mode: "pull"}, nil)
	h.reviewRound(time.Second)
	h.at(10*time.Minute, func() {
		if a := h.task().AgentReview; a == nil || !a.Running {
			t.Fatalf("no agent review running: %+v", a)
		}
		m := msg(TypeHandoffRejected, t0)
		m.Reply = &HandoffReply{TaskID: testTask, Reason: "found a bug"}
		h.send(m, 0)
	})
	h.at(11*time.Minute, func() {
		tk := h.task()
		if tk.Status != StatusBlocked || tk.AgentReview == nil || tk.AgentReview.Running || tk.AgentReview.Fallback != "" {
			t.Fatalf("status %s agent review %+v", tk.Status, tk.AgentReview)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(saves) < 2 || len(saves[0].Outbox) != 1 || len(saves[len(saves)-1].Outbox) != 0 || saves[len(saves)-1].Subject != reviewID {
			t.Errorf("the review's saves %+v: want its request listed, then cleared", saves)
		}
	})
	h.run()
	if n := len(h.eventsOf(EventReviewNoVerdict)) + len(h.eventsOf(EventReviewVerdict)); n != 0 {
		t.Errorf("an ended review was taken as an answer (%d events)", n)
	}
}
