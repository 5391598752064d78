package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// TestRecordTimes runs tasks on a dev process, with the GitHub CI provider
// on a fake, and checks what the records and the CI reads are fixed to:
// each SSOT record shows when it happened, and the GitHub repository is
// the one the task started with.
func TestRecordTimes(t *testing.T) {
	gh, ghEnv := ciGitHub(t)
	dataDir := t.TempDir()
	p := startDev(t, dataDir, append(ghEnv, "AMPFLOW_ADMINS=recorder")...)
	api := newAPIClient(t, p.api, "")
	tasks := dial(t, p)

	t.Run("AckAndDecisionTimes", func(t *testing.T) {
		const id = "T-2026-931"
		a := &agent{t: t, tasks: tasks, repo: ghRepo(t)}
		plan := lowRiskPlan(a.repo)
		plan.RiskLevel = amp.RiskHigh // the plan waits for an admin
		api.startTask(id, plan)
		dec := api.pending(id, task.KindPlanApproval, 60*time.Second)

		beforeDecide := time.Now()
		if _, err := tasks.Decide(context.Background(), id, decision.Answer{DecisionID: dec.ID, Digest: dec.Digest, Option: decision.OptApprove, By: "recorder", Channel: "cli"}); err != nil {
			t.Fatal(err)
		}
		d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
		beforeAck := time.Now()
		a.ack(d)

		var ack ssot.Record
		recs := map[string]ssot.Record{}
		eventually(t, 30*time.Second, "the ACK and the decision's outcome in the SSOT", func() (bool, error) {
			for _, r := range ssotHistory(t, dataDir, id) {
				recs[r.ID] = r
				if r.Kind == string(ssot.KindAck) && strings.Contains(string(r.Body), `"ack_of":"`+d.MsgID+`"`) {
					ack = r
				}
			}
			_, outcome := recs[dec.ID+"-outcome"]
			return outcome && ack.ID != "", nil
		})
		for _, c := range []struct {
			what     string
			at       time.Time
			after    bool // after the mark, else before it
			mark     time.Time
			markName string
		}{
			{"the decision raised", recs[dec.ID].RecordedAt, false, beforeDecide, "the admin decided"},
			{"the decision's outcome", recs[dec.ID+"-outcome"].RecordedAt, true, beforeDecide, "the admin decided"},
			{"the dispatch", recs[d.MsgID].RecordedAt, false, beforeAck, "the executor ACKed"},
			{"the executor's ACK", ack.RecordedAt, true, beforeAck, "the executor ACKed"},
		} {
			if c.at.IsZero() || c.at.Before(c.mark) == c.after {
				t.Errorf("the record of %s shows %s; want it %s %s (%s)", c.what, c.at.Format(time.RFC3339Nano),
					map[bool]string{true: "after", false: "before"}[c.after], c.markName, c.mark.Format(time.RFC3339Nano))
			}
		}

		// The API's history shows the same times.
		var hist httpapi.HistoryResponse
		if code, resp := api.call("GET", "/v1/tasks/"+id+"/history", nil, &hist); code != http.StatusOK {
			t.Fatalf("history: %d %s", code, resp)
		}
		i := slices.IndexFunc(hist.Records, func(r ssot.Record) bool { return r.ID == ack.ID })
		if i < 0 || !hist.Records[i].RecordedAt.Equal(ack.RecordedAt) {
			t.Errorf("the API's history does not show the ACK %s at %s", ack.ID, ack.RecordedAt)
		}
		if _, err := tasks.Cancel(context.Background(), id, task.CancelInput{Reason: "test over", By: "recorder"}); err != nil {
			t.Fatal(err)
		}
	})

	// The executor points origin elsewhere after the start: CI still
	// reads the repository the task started with, and the reviewer's diff
	// URL is on it too.
	t.Run("CIRepoFixedAtStart", func(t *testing.T) {
		const id = "T-2026-932"
		a := &agent{t: t, tasks: tasks, repo: ghRepo(t)} // origin acme/demo
		api.startTask(id, lowRiskPlan(a.repo))
		d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
		a.ack(d)
		git(t, a.repo, "config", "remote.origin.url", "https://github.com/mallory/demo.git")
		m := pushed(gh, a, d, "hello\n")
		a.send(m)

		req := a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
		sha := m.Result().CommitHash
		// The OWNER/NAME of each check-runs request for sha.
		var got []string
		for _, r := range gh.Requests() {
			if parts := strings.Split(strings.TrimPrefix(r.Path, "/api/v3/"), "/"); len(parts) == 6 && parts[3] == "commits" && parts[4] == sha &&
				strings.HasPrefix(parts[5], "check-runs") {
				got = append(got, parts[1]+"/"+parts[2])
			}
		}
		if len(got) == 0 || slices.ContainsFunc(got, func(r string) bool { return r != "acme/demo" }) {
			t.Errorf("CI read the checks of %s on %v; want acme/demo only", sha, got)
		}
		if u := req.Request().DiffURL; !strings.HasPrefix(u, "https://github.com/acme/demo/compare/") {
			t.Errorf("diff_url %q, want a compare URL on acme/demo", u)
		}
		if st := api.state(id); st.CIRepo != "github.com/acme/demo" {
			t.Errorf("state ci_repo %q, want github.com/acme/demo", st.CIRepo)
		}
		a.ack(req)
		a.send(a.verdict(req, amp.DecisionApproved))
		api.done(id, 60*time.Second)
	})
}
