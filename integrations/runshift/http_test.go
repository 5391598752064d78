package runshift

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
	"github.com/ampflow/ampflow/workflows/gate"
)

const (
	tailorKey  = "rs-amp-tailor-0123456789abcdef"
	deployKey  = "rs-amp-deploy-0123456789abcdef"
	adminToken = "admin-token-0123456789"
	coordToken = "coord-token-0123456789"
)

var testNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

type testGate struct {
	t      *testing.T
	store  *ssot.DB
	path   string
	intake *Intake
	url    string
	mu     sync.Mutex
	starts map[string]int
}

func newTestGate(t *testing.T, change func(*config.Config)) *testGate {
	t.Helper()
	db, path := httpapitest.Store(t)
	cfg := config.Default()
	cfg.Gate.Agents = []config.GateAgent{
		{ID: "resume-tailor", KeyEnv: "TAILOR_KEY", Projects: []string{"job-search"}},
		{ID: "deployer", KeyEnv: "DEPLOY_KEY"},
	}
	cfg.Gate.WebhookAllow = []string{"127.0.0.1:1", "127.0.0.1:2", "*.example.com"}
	if change != nil {
		change(&cfg)
	}
	g := &testGate{t: t, store: db, path: path, starts: map[string]int{}}
	in, err := NewIntake(cfg.Gate, cfg.Pricing, db, func(_ context.Context, in gate.Input) (gate.Started, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.starts[in.GateID]++
		return gate.Started{GateID: in.GateID, WorkflowID: gate.WorkflowID(in.GateID), Existing: g.starts[in.GateID] > 1}, nil
	}, func(k string) (string, bool) {
		return map[string]string{"TAILOR_KEY": tailorKey, "DEPLOY_KEY": deployKey}[k], true
	}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	in.Now = func() time.Time { return testNow }
	in.Logger = slog.New(slog.DiscardHandler)
	g.intake = in
	s := httpapi.New(httpapi.Options{Store: db, Tokens: []config.AuthToken{{Token: adminToken, Role: amp.RoleAdmin, Name: "ops"},
		{Token: coordToken, Role: amp.RoleCoordinator, Name: "coord"}}})
	Register(s, in)
	g.url = httpapitest.Serve(t, s)
	return g
}

type resp struct {
	status int
	body   []byte
}

func (g *testGate) do(method, path, token string, body any) resp {
	g.t.Helper()
	r := httpapitest.Do(g.t, method, g.url+path, token, body)
	return resp{r.Status, r.Body}
}

func (r resp) want(t *testing.T, status int) resp {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	return r
}

func (r resp) reply(t *testing.T) Reply {
	t.Helper()
	var out Reply
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (r resp) fields(t *testing.T) []string {
	t.Helper()
	var e struct {
		Error struct {
			Code   string           `json:"code"`
			Fields []amp.FieldError `json:"fields"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range e.Error.Fields {
		out = append(out, f.Path)
	}
	return out
}

// payload is the runshift example's payload.
func payload(run string, gated bool) map[string]any {
	return map[string]any{
		"amp_version": "1.0", "agent_id": "resume-tailor", "run_id": run, "project_id": "job-search",
		"status": "completed", "summary": "Rewrote resume for Senior PM role at Stripe", "proposed_action": "Send to applicant",
		"artifacts": []any{map[string]any{"type": "text", "content": "…"}}, "model": "claude-sonnet-4-6",
		"input_tokens": 1842, "output_tokens": 614, "cost_usd": 0.014736, "gate_required": gated,
		"started_at": "2026-03-06T22:10:38Z", "completed_at": "2026-03-06T22:10:46Z",
		"metadata": map[string]any{"candidate_id": "123"}, "webhook_url": nil,
	}
}

// TestSignalNoGate: a signal that asks for no gate is approved at once,
// and recorded with its cost, at both paths.
func TestSignalNoGate(t *testing.T) {
	g := newTestGate(t, nil)
	for i, path := range []string{"/v1/signals", "/amp/signal"} {
		rep := g.do("POST", path, tailorKey, payload(fmt.Sprintf("run-%d", i), false)).want(t, 200).reply(t)
		if rep.Status != gate.StatusApproved || rep.GateID != GateID("resume-tailor", fmt.Sprintf("run-%d", i)) {
			t.Fatalf("%s: %+v", path, rep)
		}
		row, err := g.store.Gate(context.Background(), rep.GateID)
		if err != nil || row.Gated || row.Status != "approved" || row.CostUSD < 0.0147 || row.CostUSD > 0.01474 || row.Mismatch {
			t.Fatalf("row %+v %v", row, err)
		}
		if recs, _, err := g.store.History(context.Background(), gate.WorkflowID(rep.GateID), ssot.Page{}); err != nil || len(recs) != 1 || recs[0].Kind != "signal" {
			t.Fatalf("records %+v %v", recs, err)
		}
	}
	if len(g.starts) != 0 {
		t.Fatalf("gates started: %v", g.starts)
	}
}

// TestSignalGatedOnce: a declared gate answers 202 pending and starts one
// gate; the same run_id again changes nothing.
func TestSignalGatedOnce(t *testing.T) {
	g := newTestGate(t, nil)
	p := payload("run-1", true)
	p["webhook_url"] = "http://127.0.0.1:1/hook"
	first := g.do("POST", "/amp/signal", tailorKey, p).want(t, 202).reply(t)
	if first.Status != gate.StatusPending || first.Message != "Awaiting operator approval" {
		t.Fatalf("%+v", first)
	}
	// The same signal, its keys in another order (a struct's, not a
	// map's sorted ones), sent again later by a run of the agent that
	// listens elsewhere, is a duplicate.
	raw, _ := json.Marshal(p)
	var sig Signal
	if err := json.Unmarshal(raw, &sig); err != nil {
		t.Fatal(err)
	}
	sig.StartedAt, sig.CompletedAt = "2026-03-07T08:00:00Z", "2026-03-07T08:00:09Z"
	hook := "http://127.0.0.1:2/hook"
	sig.WebhookURL = &hook
	reordered, _ := json.Marshal(sig)
	if bytes.Equal(reordered, raw) {
		t.Fatal("same order")
	}
	again := g.do("POST", "/v1/signals", tailorKey, reordered).want(t, 202).reply(t)
	if again.GateID != first.GateID || !again.Duplicate {
		t.Fatalf("again %+v", again)
	}
	// The run with another body is a conflict naming the run, not the
	// old gate's answer.
	other := payload("run-1", true)
	other["webhook_url"] = "http://127.0.0.1:1/hook"
	other["proposed_action"] = "Delete the applicant's files"
	r := g.do("POST", "/v1/signals", tailorKey, other).want(t, 409)
	if f := r.fields(t); len(f) != 1 || f[0] != "run_id" || !strings.Contains(string(r.body), `\"run-1\"`) {
		t.Fatalf("conflict %s", r.body)
	}
	rows, _, _ := g.store.GateList(context.Background(), ssot.GateFilter{RunID: "run-1"}, ssot.Page{})
	if len(rows) != 1 || rows[0].Callback != gate.CallbackWaiting {
		t.Fatalf("rows %+v", rows)
	}
	recs, _, _ := g.store.History(context.Background(), gate.WorkflowID(first.GateID), ssot.Page{})
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	// The agent reads where its run stands with its key; another key
	// learns nothing of it.
	if r := g.do("GET", "/v1/signals/run-1", tailorKey, nil).want(t, 200).reply(t); r.Status != gate.StatusPending || r.GateID != first.GateID {
		t.Fatalf("status %+v", r)
	}
	g.do("GET", "/v1/signals/run-1", deployKey, nil).want(t, 404)
	g.do("GET", "/v1/signals/run-1", "", nil).want(t, 401)
	// Another agent's run of the same id is its own gate: the first
	// agent's run id is neither taken nor shown.
	d := payload("run-1", true)
	d["agent_id"], d["project_id"] = "deployer", ""
	if r := g.do("POST", "/v1/signals", deployKey, d).want(t, 202).reply(t); r.GateID == first.GateID || r.Duplicate {
		t.Fatalf("another agent's run %+v", r)
	}

	// Resolved, the duplicate answers the resolution.
	g.resolve(first.GateID, "reject", "ops")
	last := g.do("POST", "/v1/signals", tailorKey, p).want(t, 200).reply(t)
	if last.Status != gate.StatusRejected || g.starts[first.GateID] != 2 {
		t.Fatalf("%+v, starts %v", last, g.starts)
	}
	var m dto.Metric
	if err := g.intake.Metrics.signals.WithLabelValues("resume-tailor", "duplicate").Write(&m); err != nil || m.Counter.GetValue() != 2 {
		n := m.Counter.GetValue()
		t.Fatalf("duplicates counted %v", n)
	}
}

func TestSignalAuth(t *testing.T) {
	g := newTestGate(t, nil)
	g.do("POST", "/v1/signals", "", payload("r", false)).want(t, 401)
	g.do("POST", "/v1/signals", "rs-amp-wrong-000000000000", payload("r", false)).want(t, 401)
	g.do("POST", "/v1/signals", adminToken, payload("r", false)).want(t, 401)
	// The deployer's key cannot post as the tailor.
	if f := g.do("POST", "/v1/signals", deployKey, payload("r", false)).want(t, 403).fields(t); f[0] != "agent_id" {
		t.Fatalf("fields %v", f)
	}
	p := payload("r", false)
	p["project_id"] = "payroll"
	if f := g.do("POST", "/v1/signals", tailorKey, p).want(t, 403).fields(t); f[0] != "project_id" {
		t.Fatalf("fields %v", f)
	}
	rows, _, _ := g.store.GateList(context.Background(), ssot.GateFilter{}, ssot.Page{})
	if len(rows) != 0 {
		t.Fatalf("refused signals recorded: %+v", rows)
	}
}

func TestSignalValidation(t *testing.T) {
	g := newTestGate(t, nil)
	cases := []struct {
		name   string
		change func(p map[string]any)
		field  string
	}{
		{"Version", func(p map[string]any) { p["amp_version"] = "2.0" }, "amp_version"},
		{"NoRun", func(p map[string]any) { delete(p, "run_id") }, "run_id"},
		{"RunPattern", func(p map[string]any) { p["run_id"] = "run 1" }, "run_id"},
		{"RunLong", func(p map[string]any) { p["run_id"] = strings.Repeat("r", MaxIDLen+1) }, "run_id"},
		{"Status", func(p map[string]any) { p["status"] = "done" }, "status"},
		{"Summary", func(p map[string]any) { p["summary"] = " " }, "summary"},
		{"SummaryLong", func(p map[string]any) { p["summary"] = strings.Repeat("é", MaxSummary+1) }, "summary"},
		{"ActionRequired", func(p map[string]any) { p["gate_required"] = true; delete(p, "proposed_action") }, "proposed_action"},
		{"Artifacts", func(p map[string]any) { p["artifacts"] = make([]any, MaxArtifacts+1) }, "artifacts"},
		{"Tokens", func(p map[string]any) { p["input_tokens"] = -1 }, "input_tokens"},
		{"TokensMissing", func(p map[string]any) { delete(p, "output_tokens") }, "output_tokens"},
		{"TokensType", func(p map[string]any) { p["output_tokens"] = "many" }, "output_tokens"},
		{"Cost", func(p map[string]any) { delete(p, "cost_usd") }, "cost_usd"},
		{"Gate", func(p map[string]any) { delete(p, "gate_required") }, "gate_required"},
		{"Started", func(p map[string]any) { p["started_at"] = "yesterday" }, "started_at"},
		{"Order", func(p map[string]any) { p["completed_at"] = "2026-03-06T22:10:00Z" }, "completed_at"},
		{"Metadata", func(p map[string]any) { p["metadata"] = []any{1} }, "metadata"},
		{"ErrorCode", func(p map[string]any) { p["status"] = "failed"; p["metadata"] = map[string]any{"error_code": 7} }, "metadata.error_code"},
		{"Unknown", func(p map[string]any) { p["extra"] = 1 }, "extra"},
		{"WebhookHost", func(p map[string]any) { p["webhook_url"] = "http://169.254.169.254/latest" }, "webhook_url"},
		{"WebhookScheme", func(p map[string]any) { p["webhook_url"] = "file:///etc/passwd" }, "webhook_url"},
		{"WebhookUser", func(p map[string]any) { p["webhook_url"] = "http://u:p@hooks.example.com/" }, "webhook_url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := payload("run-"+c.name, false)
			c.change(p)
			f := g.do("POST", "/v1/signals", tailorKey, p).want(t, 400).fields(t)
			if len(f) == 0 || f[0] != c.field {
				t.Fatalf("fields %v, want %s first", f, c.field)
			}
		})
	}
	big := bytes.Repeat([]byte("x"), MaxBody+1)
	g.do("POST", "/v1/signals", tailorKey, []byte(`{"summary":"`+string(big)+`"}`)).want(t, 413)
	p := payload("ok", true)
	p["webhook_url"] = "https://hooks.example.com/gate"
	g.do("POST", "/v1/signals", tailorKey, p).want(t, 202)
	rows, _, _ := g.store.GateList(context.Background(), ssot.GateFilter{}, ssot.Page{})
	if len(rows) != 1 {
		t.Fatalf("%d rows: refused signals were recorded", len(rows))
	}
	// Each refusal is kept in the SSOT error log, with its body.
	errs, _, err := g.store.Errors(context.Background(), ssot.Page{Limit: 100})
	if err != nil || len(errs) != len(cases)+1 || errs[0].Source != "signal" {
		t.Fatalf("%d errors kept (%v), want %d", len(errs), err, len(cases)+1)
	}
	found := false
	for _, e := range errs {
		found = found || (strings.Contains(e.Reason, "webhook_url") && strings.Contains(e.Raw, "169.254.169.254"))
	}
	if !found {
		t.Error("the refused webhook_url is not in the error log")
	}
}

// TestSignalRules: rules in order; always adds a gate, never waives it.
func TestSignalRules(t *testing.T) {
	g := newTestGate(t, func(c *config.Config) {
		c.Gate.Rules = []config.GateRule{
			{Agent: "resume-tailor", Action: "(?i)^send", Gate: config.GateAlways},
			{Agent: "resume-tailor", Gate: config.GateNever},
		}
	})
	if r := g.do("POST", "/v1/signals", tailorKey, payload("a", false)).want(t, 202).reply(t); r.Status != gate.StatusPending {
		t.Fatalf("%+v", r)
	}
	p := payload("b", true)
	p["proposed_action"] = "Archive the draft"
	if r := g.do("POST", "/v1/signals", tailorKey, p).want(t, 200).reply(t); r.Status != gate.StatusApproved {
		t.Fatalf("%+v", r)
	}
	row, _, _ := g.store.GateByRun(context.Background(), "resume-tailor", "a")
	if len(row.Reasons) != 1 || row.Reasons[0] != "gate.rules[0]: always" {
		t.Fatalf("reasons %v", row.Reasons)
	}
}

// TestCostMismatch: a reported cost 10 % off the pricing table is flagged
// and the computed cost counts.
func TestCostMismatch(t *testing.T) {
	g := newTestGate(t, nil)
	p := payload("m", false)
	p["cost_usd"] = 0.007532
	g.do("POST", "/v1/signals", tailorKey, p).want(t, 200)
	row, _, _ := g.store.GateByRun(context.Background(), "resume-tailor", "m")
	if !row.Mismatch || row.CostUSD < 0.0147 || len(row.Reasons) != 1 {
		t.Fatalf("%+v", row)
	}
}

func TestGatesListAndShow(t *testing.T) {
	g := newTestGate(t, nil)
	tick := testNow
	g.intake.Now = func() time.Time { tick = tick.Add(time.Second); return tick }
	for i := range 5 {
		g.do("POST", "/v1/signals", tailorKey, payload(fmt.Sprintf("l%d", i), i%2 == 0)).want(t, []int{202, 200}[i%2])
	}
	g.do("GET", "/v1/gates", "", nil).want(t, 401)
	g.do("GET", "/v1/gates?status=maybe", adminToken, nil).want(t, 400)
	g.do("GET", "/v1/gates?colour=red", adminToken, nil).want(t, 400)
	var ids []string
	cursor := ""
	for {
		var page List
		r := g.do("GET", "/v1/gates?status=pending&limit=2&cursor="+cursor, adminToken, nil).want(t, 200)
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Gates {
			ids = append(ids, v.RunID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if fmt.Sprint(ids) != "[l4 l2 l0]" {
		t.Fatalf("pending runs %v", ids)
	}
	var v View
	r := g.do("GET", "/v1/gates/"+GateID("resume-tailor", "l2"), adminToken, nil).want(t, 200)
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	if v.Status != gate.StatusPending || v.ProposedAction != "Send to applicant" || v.Cost.ComputedUSD == 0 || !v.Gated {
		t.Fatalf("view %+v", v)
	}
	// The operator sees the artifacts and the agent's other signals,
	// newest first.
	if len(v.Artifacts) != 1 || !strings.Contains(string(v.Artifacts[0]), `"type":"text"`) {
		t.Fatalf("artifacts %s", v.Artifacts)
	}
	var hist []string
	for _, h := range v.History {
		hist = append(hist, h.RunID+":"+string(h.Status))
	}
	if fmt.Sprint(hist) != "[l4:pending l3:approved l1:approved l0:pending]" || v.History[0].CostUSD == 0 {
		t.Fatalf("history %v", hist)
	}
	g.do("GET", "/v1/gates/gate_nope", adminToken, nil).want(t, 404)
}

// resolve resolves a gate as its workflow does: its row, and the outcome
// in its chain that the row is read against.
func (g *testGate) resolve(gateID, option, by string) {
	g.t.Helper()
	status := "rejected"
	if option == "approve" {
		status = "approved"
	}
	ctx := context.Background()
	if err := g.store.ResolveGate(ctx, gateID, status, by, testNow); err != nil {
		g.t.Fatal(err)
	}
	body := fmt.Sprintf(`{"option":%q,"by":%q,"at":%q}`, option, by, testNow.Format(time.RFC3339))
	if _, err := g.store.Append(ctx, gate.WorkflowID(gateID),
		[]ssot.Entry{{ID: gateID + "-d1-outcome", Kind: "decision", RecordedAt: testNow, Body: []byte(body)}}); err != nil {
		g.t.Fatal(err)
	}
}

// TestGateStatusFromChain: a gate's status is its chain's; a row set to
// approved by hand is refused by name wherever it would be answered.
func TestGateStatusFromChain(t *testing.T) {
	g := newTestGate(t, nil)
	first := g.do("POST", "/v1/signals", tailorKey, payload("run-1", true)).want(t, 202).reply(t)
	db, err := sql.Open("sqlite", g.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE gates SET status = 'approved', resolved_by = 'ops' WHERE gate_id = ?`, first.GateID); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/gates/" + first.GateID, "/v1/gates?agent=resume-tailor"} {
		r := g.do("GET", path, adminToken, nil).want(t, 500)
		if !strings.Contains(string(r.body), "gates row "+first.GateID+" disagrees with its chain") {
			t.Fatalf("%s: %s", path, r.body)
		}
	}
	r := g.do("GET", "/v1/signals/run-1", tailorKey, nil).want(t, 500)
	if strings.Contains(string(r.body), `"approved"`) {
		t.Fatalf("signal status %s", r.body)
	}
	// The same signal posted again is not answered approved either.
	g.do("POST", "/v1/signals", tailorKey, payload("run-1", true)).want(t, 500)
}
