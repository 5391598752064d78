package httpapi

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
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
			Operation: map[string]any{"summary": "Make a thing", "responses": map[string]any{
				"201": map[string]any{"description": "Made."},
				"402": map[string]any{"description": "No budget left (code thing_spent)."},
			}}},
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

// TestAddDocumentsEveryAnswer sends an added route each request the API
// refuses before or around its handler and checks that the served
// document lists the status it answered on that route's operation.
func TestAddDocumentsEveryAnswer(t *testing.T) {
	h := newHarness(t, false)
	addThing(h)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	h.do(t, "GET", "/v1/openapi.json", "", "").decode(t, &doc)
	req := func(method, path, token, ctype, origin, body string) *http.Request {
		r, _ := http.NewRequest(method, h.ts.URL+path, strings.NewReader(body))
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		return r
	}
	big := `{"name":"` + strings.Repeat("x", DefaultMaxBody) + `"}`
	for _, c := range []struct {
		name string
		req  *http.Request
		want int
	}{
		{"NoToken", req("POST", "/v1/things", "", "application/json", "", `{"name":"x"}`), http.StatusUnauthorized},
		{"WrongRole", req("POST", "/v1/things", executorToken, "application/json", "", `{"name":"x"}`), http.StatusForbidden},
		{"NotJSON", req("POST", "/v1/things", adminToken, "text/plain", "", `name=x`), http.StatusUnsupportedMediaType},
		{"TooLarge", req("POST", "/v1/things", adminToken, "application/json", "", big), http.StatusRequestEntityTooLarge},
		{"UnknownField", req("POST", "/v1/things", adminToken, "application/json", "", `{"nmae":"x"}`), http.StatusBadRequest},
		{"OwnCode", req("POST", "/v1/things", adminToken, "application/json", "", `{"name":"spent"}`), http.StatusPaymentRequired},
		{"OpenCrossSite", req("GET", "/v1/things/open", "", "", "https://evil.example", ""), http.StatusForbidden},
		{"OpenBodyNotJSON", req("GET", "/v1/things/open", "", "text/plain", "", "x"), http.StatusUnsupportedMediaType},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.send(t, c.req)
			wantStatus(t, r, c.want)
			op := doc.Paths[c.req.URL.Path][strings.ToLower(c.req.Method)]
			if op.Responses[strconv.Itoa(r.status)] == nil {
				t.Errorf("%s %s answered %d, which its operation does not list (it lists %v)",
					c.req.Method, c.req.URL.Path, r.status, slices.Sorted(maps.Keys(op.Responses)))
			}
		})
	}
}

// TestAddDecisionKinds: the kinds a system's decisions have join the
// document's DecisionKind enum once, after the API's own.
func TestAddDecisionKinds(t *testing.T) {
	h := newHarness(t, false)
	h.srv.Add(Spec{DecisionKinds: []decision.Kind{"thing_approval"}})
	h.srv.Add(Spec{DecisionKinds: []decision.Kind{"thing_approval", "thing_refund"}})
	var doc struct {
		Components struct {
			Schemas struct {
				DecisionKind struct {
					Enum []string `json:"enum"`
				} `json:"DecisionKind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	h.do(t, "GET", "/v1/openapi.json", "", "").decode(t, &doc)
	enum := doc.Components.Schemas.DecisionKind.Enum
	if !slices.Contains(enum, string(task.KindPlanApproval)) || !slices.Contains(enum, "thing_refund") {
		t.Fatalf("DecisionKind enum %v lacks the API's own or an added kind", enum)
	}
	if n := len(slices.DeleteFunc(slices.Clone(enum), func(k string) bool { return k != "thing_approval" })); n != 1 {
		t.Errorf("thing_approval listed %d times in %v", n, enum)
	}
}
