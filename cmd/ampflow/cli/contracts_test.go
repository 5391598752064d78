package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/integrations/amcp"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// TestContractsShow reads a contract through the API's contract route
// with the agent key that decided it; another key, none, or an API token
// are refused.
func TestContractsShow(t *testing.T) {
	store, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := httpapi.New(httpapi.Options{Store: store, OpenName: "ana"})
	amcp.Register(srv, amcp.Options{Store: store, Secret: []byte("s"), Authenticate: func(h string) (string, bool) {
		switch h {
		case "Bearer key-deployer":
			return "deployer", true
		case "Bearer key-linter":
			return "linter", true
		}
		return "", false
	}})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	req, _ := http.NewRequest("POST", ts.URL+"/v1/decide", strings.NewReader(`{"intent":"git push the fix","context":{"parameters":{"remote":"origin","branch":"fix"}},"sessionId":"s1"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer key-deployer")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var d amcp.DecideResponse
	err = json.NewDecoder(resp.Body).Decode(&d)
	resp.Body.Close()
	if err != nil || d.ContractID == "" {
		t.Fatalf("decide: %v %+v", err, d)
	}

	env := map[string]string{"AMPFLOW_API_URL": ts.URL, "AMPFLOW_AGENT_KEY": "key-deployer", "LINTER_KEY": "key-linter"}
	t.Run("Text", func(t *testing.T) {
		r := run(t, "", env, nil, "contracts", "show", d.ContractID)
		if r.code != ExitOK || !strings.Contains(r.stdout, "state           issued") || !strings.Contains(r.stdout, "parameter       branch=fix") ||
			!strings.Contains(r.stdout, "git.push") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		r := run(t, "", env, nil, "contracts", "show", d.ContractID, "-o", "json")
		var v amcp.ContractView
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.ContractID != d.ContractID || v.State != "issued" || v.SessionID != "s1" {
			t.Fatalf("exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
	})
	t.Run("AnotherKey", func(t *testing.T) {
		r := run(t, "", env, nil, "contracts", "show", "--key-env", "LINTER_KEY", d.ContractID)
		if r.code != ExitFailed || !strings.Contains(r.stderr, "no contract") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("NotAnAgentKey", func(t *testing.T) {
		r := run(t, "", map[string]string{"AMPFLOW_API_URL": ts.URL, "AMPFLOW_AGENT_KEY": "an-api-token"}, nil, "contracts", "show", d.ContractID)
		if r.code != ExitFailed || !strings.Contains(r.stderr, "agent key of gate.agents") || strings.Contains(r.stderr, "an-api-token") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("NoKey", func(t *testing.T) {
		r := run(t, "", map[string]string{"AMPFLOW_API_URL": ts.URL}, nil, "contracts", "show", d.ContractID)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "AMPFLOW_AGENT_KEY") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}
