package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
)

const testAgentKey = "rs-amp-0123456789abcdef"

// addAgentKeyRoutes adds two routes that take an agent key, as the action
// gate and contracts do.
func addAgentKeyRoutes(s *Server) {
	isKey := func(h string) bool { return h == "Bearer "+testAgentKey }
	ok := func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, map[string]bool{"ok": true}) }
	op := map[string]any{"responses": map[string]any{"200": map[string]any{"description": "OK"}}}
	s.Add(Spec{},
		Route{Pattern: "POST /v1/signals", Open: true, AgentKey: isKey, Handler: ok, Operation: op},
		Route{Pattern: "GET /v1/signals/{run_id}", Open: true, AgentKey: isKey, Handler: ok, Operation: op},
		Route{Pattern: "POST /v1/decide", Open: true, AgentKey: isKey, Handler: ok, Operation: op},
		Route{Pattern: "GET /v1/things", Roles: []amp.Role{amp.RoleCoordinator, amp.RoleAdmin}, Handler: ok, Operation: op})
}

func TestAgentKeyOnTokenRoute(t *testing.T) {
	h := newHarness(t, false)
	addAgentKeyRoutes(h.srv)
	t.Run("Told", func(t *testing.T) {
		r := h.do(t, "GET", "/v1/tasks", testAgentKey, "")
		wantStatus(t, r, http.StatusUnauthorized)
		e := r.errorBody(t)
		want := "this route (GET /v1/tasks) takes an API token; the bearer is a gate agent's key, and agent keys are for /v1/signals, /v1/decide"
		if e.Code != codeUnauthenticated || e.Message != want {
			t.Errorf("error %+v, want message %q", e, want)
		}
	})
	t.Run("UnknownBearer", func(t *testing.T) {
		r := h.do(t, "GET", "/v1/tasks", "not-a-key-nor-a-token", "")
		wantStatus(t, r, http.StatusUnauthorized)
		if e := r.errorBody(t); strings.Contains(e.Message, "agent key") {
			t.Errorf("an unknown bearer is told about agent keys: %q", e.Message)
		}
	})
	t.Run("AgentKeyRouteServed", func(t *testing.T) {
		wantStatus(t, h.do(t, "POST", "/v1/signals", testAgentKey, "{}"), http.StatusOK)
	})
}

// TestSecurityPerOperation checks that every operation states its
// identity as the route registered it.
func TestSecurityPerOperation(t *testing.T) {
	h := newHarness(t, false)
	addAgentKeyRoutes(h.srv)
	raw, err := h.srv.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	sec := func(method, path string) any {
		op, _ := doc["paths"].(map[string]any)[path].(map[string]any)[method].(map[string]any)
		if op == nil {
			t.Fatalf("no operation %s %s", method, path)
		}
		return op["security"]
	}
	for _, tc := range []struct {
		name, method, path string
		want               any
	}{
		{"None", "get", "/healthz", []any{}},
		{"AnyToken", "get", "/v1/tasks", []any{map[string]any{"apiToken": []any{"executor", "reviewer", "coordinator", "admin"}}}},
		{"AdminToken", "post", "/v1/decisions/{id}", []any{map[string]any{"apiToken": []any{"admin"}}}},
		{"AddedRoles", "get", "/v1/things", []any{map[string]any{"apiToken": []any{"coordinator", "admin"}}}},
		{"AgentKey", "post", "/v1/decide", []any{map[string]any{"agentKey": []any{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sec(tc.method, tc.path); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("security %v, want %v", got, tc.want)
			}
		})
	}
	schemes := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)
	for _, name := range []string{SchemeToken, SchemeAgentKey} {
		if schemes[name] == nil {
			t.Errorf("no security scheme %s", name)
		}
	}
	// The document as embedded (no systems added) states it too.
	for path, item := range servedDoc(t)["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			if _, ok := op.(map[string]any)["security"]; !ok {
				t.Errorf("%s %s has no security", strings.ToUpper(method), path)
			}
		}
	}
}
