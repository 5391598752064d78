package e2e

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the test's own connection to the SSOT file

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/amcp"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// amcpDecide asks AMCP's decide as the gate agent whose key c presents.
func (c *apiClient) amcpDecide(req amcp.DecideRequest) amcp.DecideResponse {
	c.t.Helper()
	var out amcp.DecideResponse
	if code, b := c.call("POST", "/v1/decide", req, &out); code != http.StatusOK {
		c.t.Fatalf("decide: %d %s", code, b)
	}
	return out
}

// contract reads contract id as the gate agent whose key c presents.
func (c *apiClient) contract(id string) amcp.ContractView {
	c.t.Helper()
	var v amcp.ContractView
	if code, b := c.call("GET", "/v1/contracts/"+id, nil, &v); code != http.StatusOK {
		c.t.Fatalf("GET contract %s: %d %s", id, code, b)
	}
	return v
}

// wantCode checks an AMCP refusal's status and code.
func wantCode(t *testing.T, what string, code int, body []byte, status int, want string) {
	t.Helper()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if code != status || e.Error.Code != want {
		t.Fatalf("%s: %d %s; want %d %s", what, code, body, status, want)
	}
}

const (
	deployerKey = "k-deployer-e2e-0123456789"
	linterKey   = "k-linter-e2e-0123456789"
	anaToken    = "tok-ana-0123456789ab-e2e"
)

// TestRiskContracts runs AMCP's decide → execute against `ampflow dev`:
// a human_required contract opens a gate that an admin approves through
// the decision engine; its approvalToken executes it once and a second
// execute answers 410; a contract whose stored row was changed answers
// 422; an expired one answers CONTRACT_EXPIRED whatever else is wrong.
func TestRiskContracts(t *testing.T) {
	dir := t.TempDir()
	p := startDev(t, dir,
		"AMPFLOW_AUTH_TOKENS="+anaToken+":admin:ana",
		"AMPFLOW_ADMINS=ana",
		`AMPFLOW_GATE_AGENTS=[{"id":"deployer","key_env":"E2E_DEPLOYER_KEY"},{"id":"linter","key_env":"E2E_LINTER_KEY"}]`,
		"E2E_DEPLOYER_KEY="+deployerKey,
		"E2E_LINTER_KEY="+linterKey,
		"AMPFLOW_GATE_CONTRACT_TTL=45s",
		// The test polls contracts faster than an agent would.
		"AMPFLOW_GATE_CONTRACT_RATE=100000",
	)
	api := newAPIClient(t, p.api, "")
	// keys are the clients of the two gate agents and of the admin ana,
	// reporting to t.
	keys := func(t *testing.T) (deployer, linter, ana *apiClient) {
		c := api.on(t)
		return c.as(deployerKey), c.as(linterKey), c.as(anaToken)
	}
	push := amcp.DecideRequest{Intent: "git push the fix", Context: &amcp.DecideContext{Parameters: map[string]any{"remote": "origin", "branch": "fix"}}}

	t.Run("ApprovalThenExecuteOnce", func(t *testing.T) {
		deployer, linter, ana := keys(t)
		d := deployer.amcpDecide(amcp.DecideRequest{Intent: "deploy to production",
			Context: &amcp.DecideContext{Parameters: map[string]any{"service": "web", "version": "1.2.3"}}, SessionID: "e2e"})
		if d.Decision != "EXECUTE" || d.Primitive != "deploy.production" || d.State != "awaiting_approval" || d.GateID == "" ||
			d.Risk == nil || d.Risk.MinimumHandling != "human_required" {
			t.Fatalf("decide %+v", d)
		}
		code, b := deployer.call("POST", "/v1/execute", amcp.ExecuteRequest{ContractID: d.ContractID}, nil)
		wantCode(t, "execute before approval", code, b, http.StatusForbidden, "APPROVAL_REQUIRED")

		// The gate's decision names the contract and is bound to it.
		var pending decision.Decision
		eventually(t, 30*time.Second, "the contract's gate decision", func() (bool, error) {
			var list httpapi.DecisionsResponse
			ana.call("GET", "/v1/decisions", nil, &list)
			for _, dec := range list.Decisions {
				if strings.Contains(dec.Subject, d.GateID) {
					pending = dec
					return true, nil
				}
			}
			return false, nil
		})
		if raw, _ := json.Marshal(pending); !strings.Contains(string(raw), d.ContractID) || !strings.Contains(string(raw), "deploy.production") {
			t.Errorf("the decision does not name the contract and its primitive: %s", raw)
		}
		// Its kind is one the served document allows.
		var doc struct {
			Components struct {
				Schemas struct {
					DecisionKind struct{ Enum []string } `json:"DecisionKind"`
				} `json:"schemas"`
			} `json:"components"`
		}
		ana.call("GET", "/v1/openapi.json", nil, &doc)
		if !slices.Contains(doc.Components.Schemas.DecisionKind.Enum, string(pending.Kind)) {
			t.Errorf("GET /v1/decisions lists kind %s, which DecisionKind %v does not allow", pending.Kind, doc.Components.Schemas.DecisionKind.Enum)
		}
		code, b = ana.call("POST", "/v1/decisions/"+pending.ID, httpapi.DecideRequest{Option: decision.OptApprove, Digest: pending.Digest}, nil)
		if code != http.StatusOK {
			t.Fatalf("approving: %d %s", code, b)
		}
		var v amcp.ContractView
		eventually(t, 30*time.Second, "the contract approved", func() (bool, error) {
			v = deployer.contract(d.ContractID)
			return v.State == "approved", nil
		})
		if v.DecidedBy != "ana" || !strings.HasPrefix(v.ApprovalToken, "apr_") {
			t.Fatalf("approved contract %+v", v)
		}
		code, b = linter.call("GET", "/v1/contracts/"+d.ContractID, nil, nil)
		wantCode(t, "another key's contract", code, b, http.StatusNotFound, "CONTRACT_NOT_FOUND")

		var bp amcp.ExecuteResponse
		code, b = deployer.call("POST", "/v1/execute", amcp.ExecuteRequest{ContractID: d.ContractID, ApprovalToken: v.ApprovalToken}, &bp)
		if code != http.StatusOK || strings.Join(bp.Command, " ") != "ampflow-deploy --env production web 1.2.3" {
			t.Fatalf("execute: %d %s", code, b)
		}
		code, b = deployer.call("POST", "/v1/execute", amcp.ExecuteRequest{ContractID: d.ContractID, ApprovalToken: v.ApprovalToken}, nil)
		wantCode(t, "second execute", code, b, http.StatusGone, "CONTRACT_ALREADY_REDEEMED")
		if v := deployer.contract(d.ContractID); v.State != "redeemed" {
			t.Errorf("state %s; want redeemed", v.State)
		}
	})

	t.Run("Tampered", func(t *testing.T) {
		deployer, _, _ := keys(t)
		d := deployer.amcpDecide(push)
		tamper(t, dir, `UPDATE contracts SET body = REPLACE(body, '"branch":"fix"', '"branch":"main"') WHERE id = ?`, d.ContractID)
		code, b := deployer.call("POST", "/v1/execute", amcp.ExecuteRequest{ContractID: d.ContractID}, nil)
		wantCode(t, "tampered execute", code, b, http.StatusUnprocessableEntity, "CONTRACT_INVALID")
	})

	t.Run("ExpiredWhateverElse", func(t *testing.T) {
		deployer, _, ana := keys(t)
		plain := deployer.amcpDecide(push)
		redeemed := deployer.amcpDecide(push)
		if code, b := deployer.call("POST", "/v1/execute", amcp.ExecuteRequest{ContractID: redeemed.ContractID}, nil); code != http.StatusOK {
			t.Fatalf("execute: %d %s", code, b)
		}
		tampered := deployer.amcpDecide(push)
		tamper(t, dir, `UPDATE contracts SET body = REPLACE(body, '"branch":"fix"', '"branch":"main"') WHERE id = ?`, tampered.ContractID)
		gated := deployer.amcpDecide(amcp.DecideRequest{Intent: "rm -rf the cache", Context: &amcp.DecideContext{Parameters: map[string]any{"path": "/var/cache/x"}}})
		eventually(t, 90*time.Second, "the contracts expired", func() (bool, error) {
			return deployer.contract(plain.ContractID).State == "expired", nil
		})
		// The gate of the unapproved contract expired with it, rejected,
		// not after the policy's expire_after (24h).
		eventually(t, 30*time.Second, "the expired contract's gate rejected", func() (bool, error) {
			var g struct{ Status string }
			code, _ := ana.call("GET", "/v1/gates/"+gated.GateID, nil, &g)
			return code == http.StatusOK && g.Status == "rejected", nil
		})
		for name, id := range map[string]string{"plain": plain.ContractID, "redeemed": redeemed.ContractID,
			"tampered": tampered.ContractID, "unapproved": gated.ContractID} {
			code, b := deployer.call("POST", "/v1/execute", map[string]any{"contractId": id, "approvalToken": "apr_wrong", "extra": 1}, nil)
			wantCode(t, "expired "+name, code, b, http.StatusGone, "CONTRACT_EXPIRED")
		}
	})

	// ampflow dev keeps the signing secret it made in data_dir: a
	// contract issued before a restart executes after it.
	t.Run("SurvivesRestart", func(t *testing.T) {
		deployer, _, _ := keys(t)
		d := deployer.amcpDecide(push)
		p.stop()
		p.restart()
		var bp amcp.ExecuteResponse
		if code, b := deployer.call("POST", "/v1/execute", amcp.ExecuteRequest{ContractID: d.ContractID}, &bp); code != http.StatusOK {
			t.Fatalf("execute after the restart: %d %s", code, b)
		}
		if strings.Join(bp.Command, " ") != "git push origin fix" {
			t.Errorf("blueprint %+v", bp)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		deployer, _, _ := keys(t)
		code, b := api.on(t).as("not-a-key").call("POST", "/v1/decide", push, nil)
		wantCode(t, "bad key", code, b, http.StatusUnauthorized, "UNAUTHORIZED")
		code, b = deployer.call("POST", "/v1/decide", amcp.DecideRequest{Intent: strings.Repeat("x", 513)}, nil)
		wantCode(t, "long intent", code, b, http.StatusBadRequest, "INTENT_TOO_LONG")
		code, b = deployer.call("POST", "/v1/execute", amcp.ExecuteRequest{ContractID: "cnt_00000000-0000-4000-8000-000000000000"}, nil)
		wantCode(t, "unknown contract", code, b, http.StatusNotFound, "CONTRACT_NOT_FOUND")
	})
}

// tamper changes one contract row of the dev process's SSOT file behind
// its back.
func tamper(t *testing.T, dataDir, stmt, id string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "ampflow.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(stmt, id)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampering changed %d rows", n)
	}
}
