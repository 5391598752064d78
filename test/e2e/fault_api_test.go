package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TestFaultAPI shares one dev process, with the GitHub CI provider on a
// fake, between faults that do not stop it: a flood of malformed
// messages, a CI API answering 500, and every agent message sent twice.
func TestFaultAPI(t *testing.T) {
	gh, ghEnv := ciGitHub(t)
	dataDir := t.TempDir()
	// The flood is 10,000 writes in seconds: past http.rate's default, the
	// limit would answer it instead of the checks it is here to test.
	p := startDev(t, dataDir, append(ghEnv, "AMPFLOW_HTTP_RATE=1000000")...)

	// The flood runs alone, so that every line it adds to the error log
	// is its own.
	t.Run("MalformedFlood", func(t *testing.T) { malformedFlood(t, p, dataDir) })
	t.Run("CIServerErrors", func(t *testing.T) {
		t.Parallel()
		ciServerErrors(t, p, gh)
	})
	t.Run("DuplicateSends", func(t *testing.T) {
		t.Parallel()
		duplicateSends(t, p, gh, dataDir)
	})
}

// malformedFlood posts 10,000 malformed records over a few keep-alive
// connections while a task runs: each is answered 400 and kept in the
// error log, the task does not move, and the process does not grow.
func malformedFlood(t *testing.T, p *devProc, dataDir string) {
	const total, posters = 10000, 4
	api := newAPIClient(t, p.api, "")
	const id = "T-2026-821"
	a := &agent{t: t, repo: ghRepo(t)}
	api.startTask(id, lowRiskPlan(a.repo))
	d := api.outboxMsg(id, amp.TypeTaskDispatch)
	if code, resp := api.call("POST", "/v1/acks", map[string]string{"msg_id": d.MsgID, "as": "executor"}, nil); code != http.StatusAccepted {
		t.Fatalf("ACK answered %d %s", code, resp)
	}
	api.waitFor(id, "in_progress", 60*time.Second, func(st task.State) bool { return st.Underlying() == task.StatusInProgress })

	// Records the task would take, to be broken before sending.
	yes := true
	live := [][]byte{
		mustJSON(t, a.work(d, "hello.txt", "hello from "+id+"\n")),
		mustJSON(t, amp.NewMessage(amp.RoleExecutor, amp.RoleAdmin, id, time.Now(), &amp.Escalation{
			EscalationType: amp.EscUnknown, Severity: amp.SeverityInfo, TriggeredBy: amp.RoleExecutor,
			Description: "flaky network", AffectedMsgs: []string{d.MsgID}, SystemStateSnapshot: map[string]any{},
		})),
		mustJSON(t, amp.NewAck(amp.RoleExecutor, d, time.Now())),
		mustJSON(t, amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, id, time.Now(), &amp.ReviewVerdict{
			Decision: amp.DecisionApproved, Confidence: 0.9,
			CriteriaResults: []amp.CriterionResult{{Criterion: "hello.txt says hello", Passed: &yes, Evidence: "read it"}},
		})),
	}
	valid, invalid := ampCorpus(t)
	for _, b := range live {
		if _, err := amp.ParseRecord(b); err != nil {
			t.Fatalf("a record to mutate does not parse: %v\n%s", err, b)
		}
	}
	bodies, skipped := malformedBodies(append(valid, live...), invalid, total, 20260101)
	t.Logf("%d malformed bodies from %d valid and %d invalid documents (%d mutations still parsed and were dropped)",
		len(bodies), len(valid)+len(live), len(invalid), skipped)

	_, before := api.call("GET", "/v1/tasks/"+id, nil, nil)
	histBefore := len(ssotHistory(t, dataDir, id))
	errsBefore := errorLogLines(t, dataDir)
	pid := p.cmd.Process.Pid
	rssBefore := vmRSS(t, pid)

	start := time.Now()
	var (
		mu      sync.Mutex
		codes   = map[int]int{}
		samples []string
		wg      sync.WaitGroup
	)
	next := make(chan []byte)
	for range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range next {
				path := "/v1/messages"
				if isAckShaped(b) {
					path = "/v1/acks"
				}
				code, resp, err := api.raw("POST", path, b)
				mu.Lock()
				codes[code]++
				if (err != nil || code != http.StatusBadRequest) && len(samples) < 5 {
					samples = append(samples, fmt.Sprintf("POST %s %q: %d %s %v", path, b, code, resp, err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, b := range bodies {
		next <- b
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	rssAfter := vmRSS(t, pid)

	t.Logf("%d malformed records in %s (%.0f/s) over %d connections: answers %v",
		len(bodies), elapsed.Round(time.Millisecond), float64(len(bodies))/elapsed.Seconds(), posters, codes)
	t.Logf("VmRSS of ampflow dev: %d MB before, %d MB after (%+d MB)", rssBefore>>10, rssAfter>>10, (rssAfter-rssBefore)>>10)
	if codes[http.StatusBadRequest] != total {
		t.Errorf("%d of %d malformed records answered 400; for example:\n%s", codes[http.StatusBadRequest], total, strings.Join(samples, "\n"))
	}
	if grew := (rssAfter - rssBefore) >> 10; grew >= 100 {
		t.Errorf("VmRSS grew by %d MB over the flood, want under 100 MB", grew)
	}
	// The error log is written behind the answers: wait for it to catch up.
	eventually(t, 30*time.Second, "the error log to hold every refusal", func() (bool, error) {
		n := errorLogLines(t, dataDir) - errsBefore
		return n == total, fmt.Errorf("the error log gained %d entries, want %d (one per refused record)", n, total)
	})
	_, after := api.call("GET", "/v1/tasks/"+id, nil, nil)
	if !bytes.Equal(before, after) {
		var b, a task.State
		_ = json.Unmarshal(before, &b)
		_ = json.Unmarshal(after, &a)
		t.Errorf("the task changed under the flood: status %s → %s, timeline %d → %d entries, outbox %d → %d, last error %q",
			b.Status, a.Status, len(b.Timeline), len(a.Timeline), len(b.Outbox), len(a.Outbox), a.LastError)
	}
	if n := len(ssotHistory(t, dataDir, id)); n != histBefore {
		t.Errorf("the task's SSOT history went from %d to %d records under the flood", histBefore, n)
	}
}

// isAckShaped mirrors how POST /v1/acks tells an ACK record from its short
// form: an object with an ack_of key. Only those go there; any other body
// would be read as the short form.
func isAckShaped(b []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return false
	}
	_, ok := obj["ack_of"]
	return ok
}

// sameJSON reports whether two documents hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// ciServerErrors has the GitHub API answer 500 a few times: the CI
// activity retries, and the task goes on to review and done.
func ciServerErrors(t *testing.T, p *devProc, gh *githubtest.Server) {
	const failures = 3
	api := newAPIClient(t, p.api, "")
	const id = "T-2026-822"
	a := &agent{t: t, repo: ghRepo(t)}
	api.startTask(id, lowRiskPlan(a.repo))
	d := api.outboxMsg(id, amp.TypeTaskDispatch)
	api.submit("/v1/acks", mustJSON(t, amp.NewAck(amp.RoleExecutor, d, time.Now())))
	res := pushed(gh, a, d, "hello from "+id+"\n")
	sha := res.Result().CommitHash
	gh.Fail("/commits/"+sha+"/check-runs", failures, http.StatusInternalServerError)
	api.submit("/v1/messages", mustJSON(t, res))

	req := api.outboxMsg(id, amp.TypeReviewRequest)
	if n := checkPolls(gh, sha); n <= failures {
		t.Errorf("the GitHub API was asked %d times for %s, want more than the %d that failed", n, sha, failures)
	}
	if ci, _ := req.Request().CIStatus["state"].(string); ci != "passed" {
		t.Errorf("review request carries CI state %q, want passed", ci)
	}
	api.submit("/v1/acks", mustJSON(t, amp.NewAck(amp.RoleReviewer, req, time.Now())))
	api.submit("/v1/messages", mustJSON(t, a.verdict(req, amp.DecisionApproved)))
	st := api.done(id, 60*time.Second)
	t.Logf("CI of %s asked %d times (%d answered 500); task %s", sha[:12], checkPolls(gh, sha), failures, st.Status)
}

// duplicateSends sends every kind of agent record twice, byte for byte,
// then once more with the same msg_id and other content: the first two
// are accepted with one effect, the third is a 409. The task is high risk
// so that it waits for final approval instead of ending under the
// duplicate verdict.
func duplicateSends(t *testing.T, p *devProc, gh *githubtest.Server, dataDir string) {
	api := newAPIClient(t, p.api, "")
	const id = "T-2026-823"
	a := &agent{t: t, repo: ghRepo(t)}
	plan := lowRiskPlan(a.repo)
	plan.RiskLevel = amp.RiskHigh
	api.startTask(id, plan)
	api.decide(api.pending(id, task.KindPlanApproval, 60*time.Second), decision.OptApprove)
	d := api.outboxMsg(id, amp.TypeTaskDispatch)

	type reused struct {
		path         string
		id           string
		first, other []byte
	}
	var reuses []reused
	twice := func(path, id string, first, other []byte) {
		t.Helper()
		a, b := api.submit(path, first), api.submit(path, first)
		t.Logf("POST %s of %s twice: duplicate %v, then %v", path, id, a, b)
		reuses = append(reuses, reused{path, id, first, other})
	}

	ack := amp.NewAck(amp.RoleExecutor, d, time.Now())
	otherAck := ack
	otherAck.Metadata = map[string]any{"note": "second thoughts"}
	twice("/v1/acks", ack.MsgID, mustJSON(t, ack), mustJSON(t, otherAck))

	esc := amp.NewMessage(amp.RoleExecutor, amp.RoleAdmin, id, time.Now(), &amp.Escalation{
		EscalationType: amp.EscUnknown, Severity: amp.SeverityInfo, TriggeredBy: amp.RoleExecutor,
		Description: "the test suite is slow today", AffectedMsgs: []string{d.MsgID}, SystemStateSnapshot: map[string]any{},
	})
	otherEsc := esc
	otherEsc.Payload = &amp.Escalation{
		EscalationType: amp.EscUnknown, Severity: amp.SeverityInfo, TriggeredBy: amp.RoleExecutor,
		Description: "something else entirely", AffectedMsgs: []string{d.MsgID}, SystemStateSnapshot: map[string]any{},
	}
	twice("/v1/messages", esc.MsgID, mustJSON(t, esc), mustJSON(t, otherEsc))

	res := pushed(gh, a, d, "hello from "+id+"\n")
	otherRes := res
	r := *res.Result()
	r.SelfAssessment.Notes = []string{"done, I think"}
	otherRes.Payload = &r
	twice("/v1/messages", res.MsgID, mustJSON(t, res), mustJSON(t, otherRes))

	req := api.outboxMsg(id, amp.TypeReviewRequest)
	api.submit("/v1/acks", mustJSON(t, amp.NewAck(amp.RoleReviewer, req, time.Now())))
	v := a.verdict(req, amp.DecisionApproved)
	otherV := v
	vp := *v.Verdict()
	vp.Confidence = 0.99
	otherV.Payload = &vp
	twice("/v1/messages", v.MsgID, mustJSON(t, v), mustJSON(t, otherV))

	t.Run("ReusedMsgIDOtherContent", func(t *testing.T) {
		for _, r := range reuses {
			code, resp := api.call("POST", r.path, r.other, nil)
			var e struct {
				Error struct{ Code task.Code } `json:"error"`
			}
			_ = json.Unmarshal(resp, &e)
			if code != http.StatusConflict || e.Error.Code != task.CodeConflict {
				t.Errorf("POST %s reusing %s with other content answered %d %s, want 409 conflict", r.path, r.id, code, bytes.TrimSpace(resp))
			}
		}
	})

	api.decide(api.pending(id, task.KindFinalApproval, 60*time.Second), decision.OptApprove)
	st := api.done(id, 60*time.Second)
	want := lifecycleRecords()
	want["escalation"] = 1
	want["decision"] = 4 // plan and final approval, each raised and taken
	hist := checkOnce(t, dataDir, st, want, ack.MsgID, esc.MsgID, res.MsgID, v.MsgID, d.MsgID, req.MsgID)
	for _, r := range reuses {
		for _, rec := range hist {
			if rec.ID == r.id && !sameJSON(rec.Body, r.first) {
				t.Errorf("the SSOT keeps %s as %s, want the content first sent: %s", r.id, rec.Body, r.first)
			}
		}
	}
	if st.Rounds != 1 {
		t.Errorf("%d rounds, want 1", st.Rounds)
	}
}
