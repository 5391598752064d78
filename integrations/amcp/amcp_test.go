package amcp

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/contract"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
	_ "modernc.org/sqlite" // the tests' own connection to the store's file
)

const (
	keyA = "key-deployer"
	keyB = "key-linter"
)

// fakeGates opens gates in memory; tests resolve them. Like the gate
// workflow, it records each gate's input and outcome in its chain, which
// a decided contract is checked against.
type fakeGates struct {
	mu     sync.Mutex
	store  *ssot.DB
	opened map[string]string // gate id → digest
	status map[string]string
}

func (g *fakeGates) Open(ctx context.Context, c contract.Contract, digest string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := "gate_" + strings.TrimPrefix(c.ID, contract.IDPrefix)
	g.opened[id] = digest
	g.status[id] = GatePending
	body := fmt.Sprintf(`{"gate_id":%q,"contract":{"id":%q,"digest":%q}}`, id, c.ID, digest)
	if _, err := g.store.Append(ctx, ssot.GateSubject(id), []ssot.Entry{{ID: id + "-gate", Kind: "gate", Body: []byte(body)}}); err != nil {
		return "", err
	}
	return id, nil
}

func (g *fakeGates) Status(_ context.Context, id string) (string, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.status[id], "ana", nil
}

func (g *fakeGates) resolve(t testing.TB, id, st string) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.status[id] = st
	option := "reject"
	if st == GateApproved {
		option = "approve"
	}
	body := fmt.Sprintf(`{"option":%q,"by":"ana","at":"2026-11-23T21:01:00Z"}`, option)
	if _, err := g.store.Append(context.Background(), ssot.GateSubject(id),
		[]ssot.Entry{{ID: id + "-d1-outcome", Kind: "decision", Body: []byte(body)}}); err != nil {
		t.Fatal(err)
	}
}

type harness struct {
	url   string
	store *ssot.DB
	path  string
	gates *fakeGates
	mu    sync.Mutex
	now   time.Time
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

func newHarness(t testing.TB, rate int) *harness {
	t.Helper()
	store, path := httpapitest.Store(t)
	h := &harness{store: store, path: path, gates: &fakeGates{store: store, opened: map[string]string{}, status: map[string]string{}},
		now: time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC)}
	api := httpapi.New(httpapi.Options{Store: store})
	Register(api, Options{
		Store: store, Gates: h.gates, Secret: []byte("test-secret"), TTL: 15 * time.Minute,
		Authenticate: func(header string) (string, bool) {
			switch header {
			case "Bearer " + keyA:
				return "deployer", true
			case "Bearer " + keyB:
				return "linter", true
			}
			return "", false
		},
		Rate: rate, Now: h.clock,
	})
	h.url = httpapitest.Serve(t, api)
	return h
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
}

func (r reply) code(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	r.decode(t, &e)
	return e.Error.Code
}

func (h *harness) do(t testing.TB, method, path, key, body string) reply {
	t.Helper()
	r := httpapitest.Do(t, method, h.url+path, key, body)
	return reply{r.Status, r.Header, r.Body}
}

func (h *harness) decide(t testing.TB, key, body string) DecideResponse {
	t.Helper()
	r := h.do(t, "POST", "/v1/decide", key, body)
	if r.status != http.StatusOK {
		t.Fatalf("decide: %d %s", r.status, r.body)
	}
	var out DecideResponse
	r.decode(t, &out)
	return out
}

func wantError(t *testing.T, r reply, status int, code string) {
	t.Helper()
	if r.status != status || r.code(t) != code {
		t.Fatalf("got %d %s; want %d %s", r.status, r.body, status, code)
	}
}

func execBody(id, token string) string {
	b, _ := json.Marshal(ExecuteRequest{ContractID: id, ApprovalToken: token})
	return string(b)
}

const pushIntent = `{"intent":"git push the fix","context":{"parameters":{"remote":"origin","branch":"fix"}},"sessionId":"s1"}`

func TestDecideAndExecute(t *testing.T) {
	h := newHarness(t, 0)
	d := h.decide(t, keyA, pushIntent)
	if d.Decision != contract.DecisionExecute || d.Primitive != "git.push" || !strings.HasPrefix(d.ContractID, "cnt_") ||
		d.State != "issued" || d.Risk.MinimumHandling != contract.HandlingLog || d.Risk.OverridePolicy != "escalation_only" ||
		!d.ExpiresAt.Equal(h.clock().Add(15*time.Minute)) {
		t.Fatalf("decide %+v", d)
	}
	r := h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, ""))
	if r.status != http.StatusOK {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	var bp ExecuteResponse
	r.decode(t, &bp)
	if strings.Join(bp.Command, " ") != "git push origin fix" || bp.Primitive != "git.push" {
		t.Errorf("blueprint %+v", bp)
	}
	wantError(t, h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, "")), http.StatusGone, "CONTRACT_ALREADY_REDEEMED")
	var v ContractView
	h.do(t, "GET", "/v1/contracts/"+d.ContractID, keyA, "").decode(t, &v)
	if v.State != "redeemed" || v.RedeemedAt == nil {
		t.Errorf("after execute %+v", v)
	}
}

func TestDecideAnswers(t *testing.T) {
	h := newHarness(t, 0)
	tests := []struct {
		name, body string
		check      func(DecideResponse) bool
	}{
		{"Clarify", `{"intent":"deploy the migration"}`, func(d DecideResponse) bool {
			return d.Decision == contract.DecisionClarify && d.ContractID == "" && len(d.Candidates) == 2 && d.Question != ""
		}},
		{"Insufficient", `{"intent":"merge the pull request","context":{"parameters":{"owner":"acme"}}}`, func(d DecideResponse) bool {
			return d.Decision == contract.DecisionInsufficient && strings.Join(d.Missing, ",") == "repo,pull_number" && d.ContractID == ""
		}},
		{"NoMatch", `{"intent":"order a pizza"}`, func(d DecideResponse) bool {
			return d.Decision == contract.DecisionNoMatch && d.Reason != "" && d.ContractID == ""
		}},
		{"Escalated", `{"intent":"git push","context":{"parameters":{"remote":"o","branch":"b"},"minimumHandling":"human_required"}}`, func(d DecideResponse) bool {
			return d.Risk.MinimumHandling == contract.HandlingHumanRequired && d.State == "awaiting_approval" && d.GateID != ""
		}},
		{"NotLowered", `{"intent":"rm -rf build","context":{"parameters":{"path":"build"},"minimumHandling":"allow"}}`, func(d DecideResponse) bool {
			return d.Risk.MinimumHandling == contract.HandlingHumanRequired && *d.PrimitiveRiskScore == 165
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := h.decide(t, keyA, tt.body); !tt.check(d) {
				t.Errorf("%+v", d)
			}
		})
	}
	long := fmt.Sprintf(`{"intent":%q}`, strings.Repeat("é", 513))
	wantError(t, h.do(t, "POST", "/v1/decide", keyA, long), http.StatusBadRequest, "INTENT_TOO_LONG")
	if r := h.do(t, "POST", "/v1/decide", keyA, fmt.Sprintf(`{"intent":%q}`, strings.Repeat("é", 512))); r.status != http.StatusOK {
		t.Errorf("512 characters: %d %s", r.status, r.body)
	}
	wantError(t, h.do(t, "POST", "/v1/decide", keyA, `{"intent":"x","bogus":1}`), http.StatusBadRequest, "invalid")
	big := fmt.Sprintf(`{"intent":"git push","context":{"parameters":{"remote":"o","branch":%q}}}`, strings.Repeat("b", MaxParameters))
	wantError(t, h.do(t, "POST", "/v1/decide", keyA, big), http.StatusBadRequest, "invalid")
	wantError(t, h.do(t, "POST", "/v1/decide", "", pushIntent), http.StatusUnauthorized, "UNAUTHORIZED")
	wantError(t, h.do(t, "POST", "/v1/decide", "wrong", pushIntent), http.StatusUnauthorized, "UNAUTHORIZED")
}

// Identical requests give identical answers apart from ids and times.
func TestDecideDeterministic(t *testing.T) {
	h := newHarness(t, 0)
	body := `{"intent":"force push main","context":{"parameters":{"remote":"origin","branch":"main"}},"sessionId":"s"}`
	var first map[string]any
	for i := range 5 {
		var d map[string]any
		h.do(t, "POST", "/v1/decide", keyA, body).decode(t, &d)
		delete(d, "contractId")
		delete(d, "gateId")
		delete(d, "expiresAt")
		if i == 0 {
			first = d
			continue
		}
		a, _ := json.Marshal(first)
		b, _ := json.Marshal(d)
		if string(a) != string(b) {
			t.Fatalf("answers differ:\n%s\n%s", a, b)
		}
	}
}

func TestApprovalFlow(t *testing.T) {
	h := newHarness(t, 0)
	d := h.decide(t, keyA, `{"intent":"deploy to production","context":{"parameters":{"service":"web","version":"1.2.3"}}}`)
	if d.State != "awaiting_approval" || d.GateID == "" || d.Risk.MinimumHandling != contract.HandlingHumanRequired {
		t.Fatalf("decide %+v", d)
	}
	var v ContractView
	h.do(t, "GET", "/v1/contracts/"+d.ContractID, keyA, "").decode(t, &v)
	if v.State != "awaiting_approval" || v.ApprovalToken != "" || h.gates.opened[d.GateID] != v.Digest {
		t.Fatalf("before approval %+v (gate bound to %s)", v, h.gates.opened[d.GateID])
	}
	wantError(t, h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, "")), http.StatusForbidden, "APPROVAL_REQUIRED")

	h.gates.resolve(t, d.GateID, GateApproved)
	h.do(t, "GET", "/v1/contracts/"+d.ContractID, keyA, "").decode(t, &v)
	if v.State != "approved" || v.DecidedBy != "ana" || !strings.HasPrefix(v.ApprovalToken, "apr_") {
		t.Fatalf("after approval %+v", v)
	}
	wantError(t, h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, "")), http.StatusForbidden, "APPROVAL_REQUIRED")
	wantError(t, h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, "apr_"+strings.Repeat("0", 64))), http.StatusForbidden, "APPROVAL_REQUIRED")
	// Another key sees no such contract.
	wantError(t, h.do(t, "POST", "/v1/execute", keyB, execBody(d.ContractID, v.ApprovalToken)), http.StatusNotFound, "CONTRACT_NOT_FOUND")
	wantError(t, h.do(t, "GET", "/v1/contracts/"+d.ContractID, keyB, ""), http.StatusNotFound, "CONTRACT_NOT_FOUND")

	r := h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, v.ApprovalToken))
	if r.status != http.StatusOK {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	wantError(t, h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, v.ApprovalToken)), http.StatusGone, "CONTRACT_ALREADY_REDEEMED")

	rejected := h.decide(t, keyA, `{"intent":"rm -rf /srv","context":{"parameters":{"path":"/srv"}}}`)
	h.gates.resolve(t, rejected.GateID, GateRejected)
	wantError(t, h.do(t, "POST", "/v1/execute", keyA, execBody(rejected.ContractID, "")), http.StatusForbidden, "APPROVAL_REQUIRED")
	var rv ContractView
	h.do(t, "GET", "/v1/contracts/"+rejected.ContractID, keyA, "").decode(t, &rv)
	if rv.State != "rejected" || rv.ApprovalToken != "" {
		t.Errorf("rejected %+v", rv)
	}
}

func TestTamperedContract(t *testing.T) {
	h := newHarness(t, 0)
	for _, tamper := range []string{
		`UPDATE contracts SET body = REPLACE(body, '"branch":"fix"', '"branch":"main"') WHERE id = ?`,
		`UPDATE contracts SET minimum_handling = 'allow' WHERE id = ?`,
		`UPDATE contracts SET signature = '00' || SUBSTR(signature, 3) WHERE id = ?`,
		`UPDATE contracts SET expires_at = expires_at + 3600000000 WHERE id = ?`,
	} {
		d := h.decide(t, keyA, pushIntent)
		execSQL(t, h.path, tamper, d.ContractID)
		wantError(t, h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, "")), http.StatusUnprocessableEntity, "CONTRACT_INVALID")
		wantError(t, h.do(t, "GET", "/v1/contracts/"+d.ContractID, keyA, ""), http.StatusUnprocessableEntity, "CONTRACT_INVALID")
	}
}

// An expired contract answers CONTRACT_EXPIRED whatever else is wrong:
// tampered, redeemed already, without its approval, with unknown fields.
func TestExpiredFirst(t *testing.T) {
	h := newHarness(t, 0)
	plain := h.decide(t, keyA, pushIntent)
	redeemed := h.decide(t, keyA, pushIntent)
	if r := h.do(t, "POST", "/v1/execute", keyA, execBody(redeemed.ContractID, "")); r.status != http.StatusOK {
		t.Fatal(string(r.body))
	}
	tampered := h.decide(t, keyA, pushIntent)
	execSQL(t, h.path, `UPDATE contracts SET body = REPLACE(body, '"branch":"fix"', '"branch":"main"') WHERE id = ?`, tampered.ContractID)
	gated := h.decide(t, keyA, `{"intent":"rm -rf /srv","context":{"parameters":{"path":"/srv"}}}`)

	h.advance(15 * time.Minute)
	for name, body := range map[string]string{
		"Plain":         execBody(plain.ContractID, ""),
		"Redeemed":      execBody(redeemed.ContractID, ""),
		"Tampered":      execBody(tampered.ContractID, ""),
		"NoApproval":    execBody(gated.ContractID, ""),
		"UnknownField":  fmt.Sprintf(`{"contractId":%q,"extra":true}`, plain.ContractID),
		"WrongApproval": execBody(gated.ContractID, "apr_nope"),
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, h.do(t, "POST", "/v1/execute", keyA, body), http.StatusGone, "CONTRACT_EXPIRED")
		})
	}
	var v ContractView
	h.do(t, "GET", "/v1/contracts/"+plain.ContractID, keyA, "").decode(t, &v)
	if v.State != "expired" {
		t.Errorf("state %s; want expired", v.State)
	}
}

// execSQL changes the store behind its back, as someone with the file would.
func execSQL(t *testing.T, path, stmt string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%s changed %d rows", stmt, n)
	}
}

func TestRateLimit(t *testing.T) {
	h := newHarness(t, 3)
	for range 3 {
		h.decide(t, keyA, `{"intent":"order a pizza"}`)
	}
	r := h.do(t, "POST", "/v1/decide", keyA, `{"intent":"order a pizza"}`)
	wantError(t, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED")
	if r.header.Get("Retry-After") != "20" || r.header.Get("X-RateLimit-Limit") != "3" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("headers %v", r.header)
	}
	// Another key has its own allowance; time refills this one.
	h.decide(t, keyB, `{"intent":"order a pizza"}`)
	h.advance(20 * time.Second)
	h.decide(t, keyA, `{"intent":"order a pizza"}`)
}

// Of concurrent executes of one contract, exactly one gets the blueprint.
func TestExecuteOnce(t *testing.T) {
	h := newHarness(t, 1000)
	d := h.decide(t, keyA, pushIntent)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, ""))
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[http.StatusOK] != 1 || statuses[http.StatusGone] != 15 {
		t.Errorf("statuses %v; want one 200 and 15 410", statuses)
	}
}

func TestOpenAPIDocumentsRoutes(t *testing.T) {
	h := newHarness(t, 0)
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	h.do(t, "GET", "/v1/openapi.json", "", "").decode(t, &doc)
	for _, p := range []struct{ path, method string }{{"/v1/decide", "post"}, {"/v1/contracts/{contractId}", "get"}, {"/v1/execute", "post"}} {
		if doc.Paths[p.path][p.method] == nil {
			t.Errorf("openapi.json lacks %s %s", p.method, p.path)
		}
	}
	for _, s := range []string{"AmcpDecideRequest", "AmcpDecideResponse", "AmcpContract", "AmcpExecuteRequest", "AmcpBlueprint", "AmcpRisk"} {
		if doc.Components.Schemas[s] == nil {
			t.Errorf("openapi.json lacks schema %s", s)
		}
	}
	codes, _ := json.Marshal(doc.Components.Schemas["ErrorCode"])
	for code := range Codes {
		if !strings.Contains(string(codes), string(code)) {
			t.Errorf("ErrorCode lacks %s", code)
		}
	}
}

// TestEveryAnswerDocumented sends each contract route the requests that
// make it refuse, from the API's guard to AMCP's own codes, and checks
// that the operation in the served document lists each status answered.
func TestEveryAnswerDocumented(t *testing.T) {
	h := newHarness(t, 0)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	h.do(t, "GET", "/v1/openapi.json", "", "").decode(t, &doc)
	issued := h.decide(t, keyA, pushIntent)
	gated := h.decide(t, keyA, `{"intent":"deploy to production","context":{"parameters":{"service":"web","version":"1"}}}`)
	type probe struct {
		name, method, path, key, ctype, origin, body string
		want                                         int
	}
	probes := []probe{
		{"NoKey", "POST", "/v1/decide", "", "application/json", "", pushIntent, http.StatusUnauthorized},
		{"CrossSite", "POST", "/v1/decide", keyA, "application/json", "https://evil.example", pushIntent, http.StatusForbidden},
		{"NotJSON", "POST", "/v1/decide", keyA, "text/plain", "", "deploy", http.StatusUnsupportedMediaType},
		{"TooLarge", "POST", "/v1/decide", keyA, "application/json", "", `{"intent":"` + strings.Repeat("x", httpapi.DefaultMaxBody) + `"}`, http.StatusRequestEntityTooLarge},
		{"UnknownField", "POST", "/v1/decide", keyA, "application/json", "", `{"intnet":"x"}`, http.StatusBadRequest},
		{"IntentTooLong", "POST", "/v1/decide", keyA, "application/json", "", `{"intent":"` + strings.Repeat("x", 513) + `"}`, http.StatusBadRequest},

		{"NoKey", "GET", "/v1/contracts/" + issued.ContractID, "", "", "", "", http.StatusUnauthorized},
		{"CrossSite", "GET", "/v1/contracts/" + issued.ContractID, keyA, "", "https://evil.example", "", http.StatusForbidden},
		{"BodyNotJSON", "GET", "/v1/contracts/" + issued.ContractID, keyA, "text/plain", "", "x", http.StatusUnsupportedMediaType},
		{"AnotherKeys", "GET", "/v1/contracts/" + issued.ContractID, keyB, "", "", "", http.StatusNotFound},

		{"NoKey", "POST", "/v1/execute", "", "application/json", "", execBody(issued.ContractID, ""), http.StatusUnauthorized},
		{"CrossSite", "POST", "/v1/execute", keyA, "application/json", "https://evil.example", execBody(issued.ContractID, ""), http.StatusForbidden},
		{"NotJSON", "POST", "/v1/execute", keyA, "text/plain", "", "x", http.StatusUnsupportedMediaType},
		{"TooLarge", "POST", "/v1/execute", keyA, "application/json", "", `{"contractId":"` + strings.Repeat("x", maxExecuteBody) + `"}`, http.StatusRequestEntityTooLarge},
		{"UnknownField", "POST", "/v1/execute", keyA, "application/json", "", `{"contractId":"x","extra":1}`, http.StatusBadRequest},
		{"Unapproved", "POST", "/v1/execute", keyA, "application/json", "", execBody(gated.ContractID, ""), http.StatusForbidden},
		{"Unknown", "POST", "/v1/execute", keyA, "application/json", "", execBody("cnt_00000000-0000-4000-8000-000000000000", ""), http.StatusNotFound},
	}
	send := func(t *testing.T, h *harness, p probe) reply {
		t.Helper()
		req, _ := http.NewRequest(p.method, h.url+p.path, strings.NewReader(p.body))
		for k, v := range map[string]string{"Content-Type": p.ctype, "Origin": p.origin} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		if p.key != "" {
			req.Header.Set("Authorization", "Bearer "+p.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{resp.StatusCode, resp.Header, b}
	}
	listed := func(t *testing.T, p probe, status int) {
		t.Helper()
		tmpl := p.path
		if strings.HasPrefix(tmpl, "/v1/contracts/") {
			tmpl = "/v1/contracts/{contractId}"
		}
		if doc.Paths[tmpl][strings.ToLower(p.method)].Responses[fmt.Sprint(status)] == nil {
			t.Errorf("%s %s answered %d, which its operation does not list", p.method, tmpl, status)
		}
	}
	for _, p := range probes {
		t.Run(p.method+p.path[:min(len(p.path), 16)]+"/"+p.name, func(t *testing.T) {
			r := send(t, h, p)
			if r.status != p.want {
				t.Fatalf("got %d %s; want %d", r.status, r.body, p.want)
			}
			listed(t, p, r.status)
		})
	}
	// A second request within the minute of a key allowed one.
	t.Run("RateLimited", func(t *testing.T) {
		limited := newHarness(t, 1)
		for _, p := range []probe{
			{method: "POST", path: "/v1/decide", body: pushIntent},
			{method: "GET", path: "/v1/contracts/cnt_00000000-0000-4000-8000-000000000000"},
			{method: "POST", path: "/v1/execute", body: execBody("cnt_00000000-0000-4000-8000-000000000000", "")},
		} {
			p.ctype, p.key = "application/json", keyB
			if p.body == "" {
				p.ctype = ""
			}
			limited.advance(time.Minute)
			send(t, limited, p)
			r := send(t, limited, p)
			if r.status != http.StatusTooManyRequests {
				t.Fatalf("%s %s: %d %s; want 429", p.method, p.path, r.status, r.body)
			}
			listed(t, p, r.status)
		}
	})
}

// TestApprovalFromChain: a contract's approval is its gate's outcome in
// the chain; a row set to approved by hand shows no approvalToken and
// executes with none, refused by name.
func TestApprovalFromChain(t *testing.T) {
	h := newHarness(t, 0)
	d := h.decide(t, keyA, `{"intent":"deploy to production","context":{"parameters":{"service":"web","version":"1.2.3"}}}`)
	row, err := h.store.Contract(context.Background(), d.ContractID)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, h.path, `UPDATE contracts SET state = 'approved', decided_by = 'ana' WHERE id = ?`, d.ContractID)
	r := h.do(t, "GET", "/v1/contracts/"+d.ContractID, keyA, "")
	wantError(t, r, http.StatusUnprocessableEntity, "CONTRACT_INVALID")
	if !strings.Contains(string(r.body), "contracts row "+d.ContractID) || strings.Contains(string(r.body), "apr_") {
		t.Fatalf("view %s", r.body)
	}
	// Even with the token an approval would have issued.
	token := contract.ApprovalToken([]byte("test-secret"), d.ContractID, row.Digest)
	r = h.do(t, "POST", "/v1/execute", keyA, execBody(d.ContractID, token))
	wantError(t, r, http.StatusUnprocessableEntity, "CONTRACT_INVALID")
	if !strings.Contains(string(r.body), "holds no outcome") {
		t.Fatalf("execute %s", r.body)
	}
}
