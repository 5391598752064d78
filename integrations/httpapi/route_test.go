package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// addThing adds a system with one admin route, one open route and an
// error code of its own to h's server.
func addThing(h *harness) {
	h.srv.Add(Spec{
		Schemas: map[string]any{"Thing": map[string]any{"type": "object"}},
		Codes:   map[task.Code]int{"thing_spent": http.StatusPaymentRequired},
	},
		Route{Pattern: "POST /v1/things", Roles: []amp.Role{amp.RoleAdmin},
			Handler: func(w http.ResponseWriter, r *http.Request) {
				var in struct {
					Name string `json:"name"`
				}
				if err := h.srv.Decode(w, r, &in); err != nil {
					h.srv.Error(w, r, err)
					return
				}
				if in.Name == "spent" {
					h.srv.Error(w, r, task.Errorf("thing_spent", "no budget left"))
					return
				}
				WriteJSON(w, http.StatusCreated, map[string]string{"name": in.Name, "by": CallerOf(r).Name})
			},
			Operation: map[string]any{"summary": "Make a thing"}},
		Route{Pattern: "GET /v1/things/open", Open: true,
			Handler: func(w http.ResponseWriter, r *http.Request) {
				WriteJSON(w, http.StatusOK, map[string]string{"caller": CallerOf(r).Name})
			},
			Operation: map[string]any{"summary": "Look without a token"}},
	)
}

func TestAdd(t *testing.T) {
	h := newHarness(t, false)
	addThing(h)

	t.Run("Authenticated", func(t *testing.T) {
		r := h.do(t, "POST", "/v1/things", adminToken, `{"name":"x"}`)
		wantStatus(t, r, http.StatusCreated)
		var out map[string]string
		r.decode(t, &out)
		if out["by"] != "kircerta" {
			t.Errorf("caller = %q, want the admin token's name", out["by"])
		}
	})
	t.Run("WrongRole", func(t *testing.T) {
		wantStatus(t, h.do(t, "POST", "/v1/things", executorToken, `{"name":"x"}`), http.StatusForbidden)
	})
	t.Run("NoToken", func(t *testing.T) {
		wantStatus(t, h.do(t, "POST", "/v1/things", "", `{"name":"x"}`), http.StatusUnauthorized)
	})
	t.Run("UnknownField", func(t *testing.T) {
		r := h.do(t, "POST", "/v1/things", adminToken, `{"nmae":"x"}`)
		wantStatus(t, r, http.StatusBadRequest)
		if !hasField(r.errorBody(t).Fields, "nmae") {
			t.Errorf("error %s does not name the field", r.body)
		}
	})
	t.Run("OwnCode", func(t *testing.T) {
		r := h.do(t, "POST", "/v1/things", adminToken, `{"name":"spent"}`)
		wantStatus(t, r, http.StatusPaymentRequired)
		if c := r.errorBody(t).Code; c != "thing_spent" {
			t.Errorf("code = %s", c)
		}
	})
	t.Run("Guarded", func(t *testing.T) {
		req, _ := http.NewRequest("POST", h.ts.URL+"/v1/things", strings.NewReader(`{"name":"x"}`))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "text/plain")
		wantStatus(t, h.send(t, req), http.StatusUnsupportedMediaType)
		req, _ = http.NewRequest("GET", h.ts.URL+"/v1/things/open", nil)
		req.Header.Set("Origin", "https://evil.example")
		wantStatus(t, h.send(t, req), http.StatusForbidden)
	})
	t.Run("Open", func(t *testing.T) {
		wantStatus(t, h.do(t, "GET", "/v1/things/open", "", ""), http.StatusOK)
	})
}

func TestAddDocumented(t *testing.T) {
	h := newHarness(t, false)
	addThing(h)
	var doc map[string]any
	if err := json.Unmarshal(h.do(t, "GET", "/v1/openapi.json", "", "").body, &doc); err != nil {
		t.Fatal(err)
	}
	paths := doc["paths"].(map[string]any)
	for _, p := range h.srv.Patterns() {
		method, path, _ := cutPattern(p)
		if item, _ := paths[path].(map[string]any); item[method] == nil {
			t.Errorf("route %s has no operation in the served document", p)
		}
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	if schemas["Thing"] == nil {
		t.Errorf("schemas lost in the merge: Thing=%v", schemas["Thing"])
	}
	ec := schemas["ErrorCode"].(map[string]any)
	if !strings.Contains(ec["description"].(string), "`thing_spent`: HTTP 402") {
		t.Errorf("ErrorCode does not document the added code: %v", ec["description"])
	}
	if got := len(OpenAPI()); got != len(openAPIDoc) {
		t.Errorf("Add changed the embedded document")
	}
}

func TestAddRefusesTakenNames(t *testing.T) {
	h := newHarness(t, false)
	defer func() {
		if recover() == nil {
			t.Error("a code with another status was accepted")
		}
	}()
	h.srv.Add(Spec{Codes: map[task.Code]int{task.CodeInvalid: http.StatusTeapot}})
}
