package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// testDigest is the digest of the fixture decisions.
var testDigest = strings.Repeat("ab12", 16)

// openDecision is T-2026-044's plan approval, open, one approval of two
// given.
func openDecision() decision.Decision {
	return decision.Decision{
		ID: "T-2026-044-d1", Subject: "T-2026-044", Kind: task.KindPlanApproval, Prompt: "Approve the plan?",
		Options:  []decision.Option{{ID: decision.OptApprove, Label: "Approve"}, {ID: decision.OptReject, Label: "Reject", NoteRequired: true}},
		Digest:   testDigest,
		RaisedAt: testNow.Add(-time.Hour), ExpiresAt: testNow.Add(23 * time.Hour), OnExpiry: decision.OptReject,
		Required: 2, Approvals: []decision.Approval{{By: "ops", Channel: "slack", At: testNow.Add(-time.Minute)}},
	}
}

func decideBody(option, note, digest string) string {
	b, _ := json.Marshal(map[string]string{"option": option, "note": note, "digest": digest})
	return string(b)
}

func TestDecisionsListed(t *testing.T) {
	h := newHarness(t, false)
	h.openDecisions(openDecision())
	r := h.do(t, "GET", "/v1/decisions", executorToken, "")
	wantStatus(t, r, http.StatusOK)
	// The fields a decider needs, by their JSON names.
	var raw struct {
		Decisions []map[string]any `json:"decisions"`
	}
	r.decode(t, &raw)
	if len(raw.Decisions) != 1 {
		t.Fatalf("decisions %s", r.body)
	}
	d := raw.Decisions[0]
	for _, k := range []string{"id", "subject", "kind", "digest", "expires_at", "required", "approvals", "options", "on_expiry"} {
		if _, ok := d[k]; !ok {
			t.Errorf("a listed decision has no %s: %s", k, r.body)
		}
	}
	if d["digest"] != testDigest || d["subject"] != "T-2026-044" || d["required"] != float64(2) {
		t.Errorf("listed %v", d)
	}
}

func TestDecide(t *testing.T) {
	h := newHarness(t, false)
	h.openDecisions(openDecision())
	r := h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, decideBody("approve", "fine", strings.ToUpper(testDigest)))
	wantStatus(t, r, http.StatusOK)
	want := decision.Answer{DecisionID: "T-2026-044-d1", Option: "approve", Note: "fine", Digest: testDigest, By: "kircerta", Channel: "api"}
	if h.tasks.calls[len(h.tasks.calls)-1] != "Decide T-2026-044" || h.tasks.decides[0] != want {
		t.Errorf("calls %v, decide %+v; want %+v", h.tasks.calls, h.tasks.decides, want)
	}
	var res task.DecideResult
	r.decode(t, &res)
	if res.Outcome.Option != "approve" || res.Status != task.StatusDispatched || res.Decision != nil {
		t.Errorf("result %+v", res)
	}

	for _, tok := range []string{coordToken, executorToken} {
		r = h.do(t, "POST", "/v1/decisions/T-2026-044-d1", tok, decideBody("approve", "", testDigest))
		wantStatus(t, r, http.StatusForbidden)
	}
	if len(h.tasks.decides) != 1 {
		t.Errorf("a non-admin's decision reached the task")
	}
}

// TestDecideRoutesBySubject: the answer goes to the subject the listing
// names, whatever the id looks like.
func TestDecideRoutesBySubject(t *testing.T) {
	h := newHarness(t, false)
	d := openDecision()
	d.ID, d.Subject = "G-7f3a-d2", "T-2026-051"
	h.openDecisions(openDecision(), d)
	r := h.do(t, "POST", "/v1/decisions/G-7f3a-d2", adminToken, decideBody("approve", "", testDigest))
	wantStatus(t, r, http.StatusOK)
	if last := h.tasks.calls[len(h.tasks.calls)-1]; last != "Decide T-2026-051" {
		t.Errorf("last call %q, want Decide T-2026-051", last)
	}
}

// TestDecideClosedDecision: a decision no longer open is found by its
// SSOT record, so the workflow can say who decided it.
func TestDecideClosedDecision(t *testing.T) {
	h := newHarness(t, false)
	// Recorded when it opened; closed since: no longer among the open ones.
	body, _ := json.Marshal(openDecision())
	if _, err := h.store.Append(t.Context(), "T-2026-044", []ssot.Entry{{ID: "T-2026-044-d1", Kind: string(ssot.KindDecision), Body: body}}); err != nil {
		t.Fatal(err)
	}
	msg := "decision T-2026-044-d1 already decided by ana via slack at 2026-02-26T14:00:00Z (approve)"
	h.tasks.decideErr = task.Errorf(task.CodeDecided, "%s", msg)
	r := h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, decideBody("approve", "", testDigest))
	wantStatus(t, r, http.StatusConflict)
	if e := r.errorBody(t); e.Code != task.CodeDecided || e.Message != msg {
		t.Errorf("error %+v, want decided with the workflow's message", e)
	}

	r = h.do(t, "POST", "/v1/decisions/T-2026-044-d9", adminToken, decideBody("approve", "", testDigest))
	wantStatus(t, r, http.StatusNotFound)
	if n := len(h.tasks.decides); n != 1 {
		t.Errorf("an unknown decision reached a workflow: %d decides", n)
	}
}

// TestDecideAfterTheTaskEnded: the answer that ended a task is in the
// SSOT, so a late answer hears who gave it (decided), not only that the
// task ended; one to a withdrawn decision hears it was withdrawn.
func TestDecideAfterTheTaskEnded(t *testing.T) {
	h := newHarness(t, false)
	d := openDecision()
	h.openDecisions(d)
	at := testNow.Add(-time.Minute)
	outcome := decision.Outcome{DecisionID: d.ID, Subject: d.Subject, Kind: d.Kind, Option: decision.OptApprove, By: "ops", Channel: "slack", At: at,
		Approvers: []decision.Approval{{By: "ops", Channel: "slack", At: at}, {By: "ana", Channel: "cli", At: at}}}
	body, _ := json.Marshal(outcome)
	h.store.addRecords(d.Subject, ssot.Entry{ID: d.ID + "-outcome", Kind: string(ssot.KindDecision), Body: body})
	h.tasks.decideErr = task.Errorf(task.CodeFinished, "task %s is done", d.Subject)
	r := h.do(t, "POST", "/v1/decisions/"+d.ID, adminToken, decideBody("approve", "", testDigest))
	wantStatus(t, r, http.StatusConflict)
	if e := r.errorBody(t); e.Code != task.CodeDecided || !strings.Contains(e.Message, "ops via slack") || !strings.Contains(e.Message, "ana via cli") {
		t.Errorf("error %+v, want decided naming both approvers", e)
	}

	w := openDecision()
	w.ID = "T-2026-044-d2"
	h.openDecisions(w)
	body, _ = json.Marshal(decision.Outcome{DecisionID: w.ID, Option: decision.OptWithdrawn, By: decision.By, Channel: decision.ChannelSystem, At: at, Note: "the task is done"})
	h.store.addRecords(w.Subject, ssot.Entry{ID: w.ID + "-outcome", Kind: string(ssot.KindDecision), Body: body})
	r = h.do(t, "POST", "/v1/decisions/"+w.ID, adminToken, decideBody("approve", "", testDigest))
	if e := r.errorBody(t); e.Code != task.CodeStaleDecision || !strings.Contains(e.Message, "withdrawn") {
		t.Errorf("error %+v, want stale_decision saying it was withdrawn", e)
	}
}

func TestDecideRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		body   string
		status int
		field  string
	}{
		"NoDigest":     {`{"option":"approve"}`, 400, "digest"},
		"ShortDigest":  {decideBody("approve", "", "abc123"), 400, "digest"},
		"NotHex":       {decideBody("approve", "", strings.Repeat("zz", 32)), 400, "digest"},
		"NoOption":     {fmt.Sprintf(`{"digest":%q}`, testDigest), 400, "option"},
		"NamesDecider": {fmt.Sprintf(`{"option":"approve","digest":%q,"by":"alice"}`, testDigest), 400, "by"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, false)
			h.openDecisions(openDecision())
			r := h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, c.body)
			wantStatus(t, r, c.status)
			if e := r.errorBody(t); len(e.Fields) != 1 || e.Fields[0].Path != c.field {
				t.Errorf("error %+v, want one field %s", e, c.field)
			}
			if len(h.tasks.decides) != 0 {
				t.Errorf("a refused answer reached the workflow: %+v", h.tasks.decides)
			}
		})
	}
}

// TestDecideWorkflowRefusals: the workflow's refusals reach the client
// with their code and message unchanged.
func TestDecideWorkflowRefusals(t *testing.T) {
	for _, c := range []struct {
		code task.Code
		msg  string
	}{
		{task.CodeStaleDecision, "digest: decision T-2026-044-d1 is now 9f86d081…; what is being approved changed, read it again"},
		{task.CodeDecided, "decision T-2026-044-d1 already decided by ana via slack at 2026-02-26T14:00:00Z (approve)"},
	} {
		t.Run(string(c.code), func(t *testing.T) {
			h := newHarness(t, false)
			h.openDecisions(openDecision())
			h.tasks.decideErr = task.Errorf(c.code, "%s", c.msg)
			r := h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, decideBody("approve", "", testDigest))
			wantStatus(t, r, http.StatusConflict)
			if e := r.errorBody(t); e.Code != c.code || e.Message != c.msg {
				t.Errorf("error %+v, want %s %q", e, c.code, c.msg)
			}
		})
	}
}

// TestDecideQuorumOpen: an approval short of the quorum answers 200 with
// the decision still open and its progress, and no outcome.
func TestDecideQuorumOpen(t *testing.T) {
	h := newHarness(t, false)
	d := openDecision()
	d.Approvals = nil
	h.openDecisions(d)
	d.Approvals = []decision.Approval{{By: "kircerta", Channel: "api", At: testNow}}
	p := d.Progress()
	h.tasks.decideRes = &task.DecideResult{Decision: &d, Progress: &p, Status: task.StatusAwaitingApproval}
	r := h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, decideBody("approve", "", testDigest))
	wantStatus(t, r, http.StatusOK)
	var raw map[string]json.RawMessage
	r.decode(t, &raw)
	if _, ok := raw["outcome"]; ok {
		t.Errorf("an open decision's answer has an outcome: %s", r.body)
	}
	var res task.DecideResult
	r.decode(t, &res)
	if !res.Open() || res.Progress == nil || res.Progress.String() != "1 of 2 approvals: kircerta" {
		t.Errorf("result %s, want the open decision with 1 of 2 approvals: kircerta", r.body)
	}
}

func TestCheckDecisionID(t *testing.T) {
	for id, ok := range map[string]bool{
		"T-2026-044-d1":          true,
		"G-7f3a-d2":              true,
		"":                       false,
		"a b":                    false,
		strings.Repeat("x", 201): false,
		strings.Repeat("x", 200): true,
		"T-2026-044-d1\x00":      false,
	} {
		if err := checkDecisionID(id); (err == nil) != ok {
			t.Errorf("checkDecisionID(%q) = %v, want ok %v", id, err, ok)
		}
	}
}

// openDecisions puts decisions in the store as their workflows would
// when they open them: a record each and a row among the open ones.
func (h *harness) openDecisions(ds ...decision.Decision) {
	for i := range ds {
		h.store.save(ds[i].Subject, nil, &ds[i])
	}
}
