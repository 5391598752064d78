package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/runcred"
	"github.com/ampflow/ampflow/amp/task"
)

// Route is an API route of one of ampflow's systems beside the task
// workflow (the action gate, contracts, leases and the mesh, AOF). It
// passes the API's checks like the API's own routes: the guard
// (Content-Type, Origin, Host), the bearer token unless Open, request
// metrics, and an entry in the OpenAPI document.
type Route struct {
	// Pattern is "METHOD /path", as http.ServeMux reads it.
	Pattern string
	// Roles, when not empty, are the only token roles allowed.
	Roles []amp.Role
	// Open routes take no API token: the handler checks its own
	// credentials (an agent key, a signature).
	Open bool
	// AgentKey, on an Open route, tells whether an Authorization header
	// holds a gate agent's key: the route takes agent keys (its OpenAPI
	// security is the agent key scheme), and an agent key sent to a
	// route that takes an API token is told where agent keys go.
	AgentKey func(authorization string) bool
	Handler  http.HandlerFunc
	// Operation is the route's OpenAPI operation object.
	Operation map[string]any
}

// Spec is what a system adds to the OpenAPI document besides its
// operations: the schemas they reference (#/components/schemas/<name>)
// and the HTTP status of each error code its handlers return.
type Spec struct {
	Schemas map[string]any
	Codes   map[task.Code]int
	// DecisionKinds are the kinds of the decisions the system's
	// workflows raise: GET /v1/decisions lists them, so the document's
	// DecisionKind enum gains them. Two systems may add the same kind.
	DecisionKinds []decision.Kind
}

// Add registers a system's routes and its spec. Call it before serving.
// A pattern the API already has, or a schema or code it already defines,
// panics: two systems must not claim one name.
func (s *Server) Add(spec Spec, routes ...Route) {
	for code, st := range spec.Codes {
		if have, ok := s.statusOf[code]; ok && have != st {
			panic(fmt.Sprintf("httpapi: error code %s is already HTTP %d", code, have))
		}
		s.statusOf[code] = st
	}
	for name, schema := range spec.Schemas {
		if _, ok := s.added.schemas[name]; ok {
			panic("httpapi: schema " + name + " added twice")
		}
		s.added.schemas[name] = schema
	}
	for _, k := range spec.DecisionKinds {
		if !slices.Contains(s.added.kinds, k) {
			s.added.kinds = append(s.added.kinds, k)
		}
	}
	for _, rt := range routes {
		if rt.Operation == nil {
			panic("httpapi: route " + rt.Pattern + " has no OpenAPI operation")
		}
		if rt.Open {
			s.open(rt.Pattern, rt.Handler)
			if rt.AgentKey != nil {
				s.auth[rt.Pattern] = routeAuth{identity: IdentityAgentKey}
				s.agentKeys = append(s.agentKeys, rt.AgentKey)
			}
		} else {
			s.handle(rt.Pattern, rt.Roles, rt.Handler)
		}
		s.added.ops[rt.Pattern] = rt.Operation
		s.added.routes[rt.Pattern] = rt
	}
	s.added.doc = sync.OnceValues(s.composeDoc)
}

// added is what systems added to the API.
type added struct {
	ops     map[string]map[string]any
	routes  map[string]Route
	schemas map[string]any
	kinds   []decision.Kind
	// doc is the OpenAPI document with the additions, built once.
	doc func() ([]byte, error)
}

// composeDoc merges the systems' operations, schemas and codes into the
// API's own OpenAPI document.
func (s *Server) composeDoc() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		return nil, fmt.Errorf("reading the embedded OpenAPI document: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	for pattern, op := range s.added.ops {
		method, path, ok := cutPattern(pattern)
		if !ok {
			return nil, fmt.Errorf("route %q is not METHOD /path", pattern)
		}
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		item[method] = withGuardAnswers(op, s.added.routes[pattern])
	}
	for pattern, a := range s.auth {
		method, path, _ := cutPattern(pattern)
		if op, ok := paths[path].(map[string]any)[method].(map[string]any); ok {
			op["security"] = Security(a.identity, a.roles)
		}
	}
	comps, _ := doc["components"].(map[string]any)
	comps["securitySchemes"] = SecuritySchemes()
	schemas, _ := comps["schemas"].(map[string]any)
	maps.Copy(schemas, s.added.schemas)
	if dk, ok := schemas["DecisionKind"].(map[string]any); ok && len(s.added.kinds) > 0 {
		enum, _ := dk["enum"].([]any)
		for _, k := range s.added.kinds {
			if !slices.Contains(enum, any(string(k))) {
				enum = append(enum, string(k))
			}
		}
		dk["enum"] = enum
	}
	if ec, ok := schemas["ErrorCode"].(map[string]any); ok {
		codes := slices.Sorted(maps.Keys(s.statusOf))
		enum := make([]any, len(codes))
		lines := make([]string, len(codes))
		for i, c := range codes {
			enum[i] = string(c)
			lines[i] = fmt.Sprintf("- `%s`: HTTP %d", c, s.statusOf[c])
		}
		ec["enum"] = enum
		ec["description"] = "The error's code; each code has one HTTP status:\n" + strings.Join(lines, "\n")
	}
	return marshalIndent(doc)
}

// guardAnswers are the statuses the API answers for any added route
// before or around its handler, with what they mean there.
var guardAnswers = map[int]string{
	http.StatusForbidden:            "A cross-site Origin (code forbidden).",
	http.StatusUnsupportedMediaType: "A body that is not application/json (code unsupported_media_type).",
	http.StatusMisdirectedRequest:   "With no tokens configured, a Host that is not loopback (code misdirected_request).",
	http.StatusInternalServerError:  "A fault of the server (code internal).",
}

// withGuardAnswers returns a copy of an added route's operation that
// lists every status the API itself may answer for it, besides those the
// system listed: the guard's 403, 415 and 421, a 500; 401 and 403 of the
// token check unless the route is Open; for a method with a body, 400 and
// 413 of Decode. A status the operation lists keeps its description.
func withGuardAnswers(op map[string]any, rt Route) map[string]any {
	out := maps.Clone(op)
	resp := map[string]any{}
	if have, ok := op["responses"].(map[string]any); ok {
		resp = maps.Clone(have)
	}
	more := maps.Clone(guardAnswers)
	if !rt.Open {
		more[http.StatusUnauthorized] = "No valid bearer token (code unauthenticated)."
		more[http.StatusForbidden] = "The token's role may not do this, or a cross-site Origin (code forbidden)."
	}
	method, _, _ := cutPattern(rt.Pattern)
	if method == "post" || method == "put" || method == "patch" {
		more[http.StatusBadRequest] = "Invalid input (code invalid); fields names each field at fault."
		more[http.StatusRequestEntityTooLarge] = "The body is too large (code too_large)."
	}
	if writing(strings.ToUpper(method) + " ") {
		if have, ok := resp["429"].(map[string]any); ok {
			have = maps.Clone(have)
			if _, ok := have["headers"]; !ok {
				have["headers"] = rateLimitAnswer()["headers"]
				desc, _ := have["description"].(string)
				have["description"] = strings.TrimSpace(desc + " Also: more writing requests a minute from this token than http.rate allows (Retry-After says when to try again).")
			}
			resp["429"] = have
		} else {
			resp["429"] = rateLimitAnswer()
		}
	}
	for st, desc := range more {
		key := strconv.Itoa(st)
		if _, ok := resp[key]; !ok {
			resp[key] = map[string]any{"description": desc,
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
		}
	}
	out["responses"] = resp
	return out
}

func cutPattern(p string) (method, path string, ok bool) {
	method, path, ok = strings.Cut(p, " ")
	return strings.ToLower(method), path, ok
}

func marshalIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Caller is who sent a request, as its token says.
type Caller struct {
	// Name is the token's name; the local user's in open mode.
	Name string
	// ID is the token's id (config.AuthToken.ID), empty unless set.
	ID   string
	Role amp.Role
	// Open is true when the API has no tokens: the caller may act as any
	// role.
	Open bool
	// Task, for an agent run's credential, is the one task it acts on;
	// empty for an API token.
	Task string
}

// exported is c as handlers see it.
func (c caller) exported() Caller {
	out := Caller{Name: c.name, ID: c.id, Role: c.role, Open: c.open}
	if c.run != nil {
		out.Task = c.run.Task
	}
	return out
}

// CallerOf returns who sent r, for a handler behind a token (not Open).
func CallerOf(r *http.Request) Caller {
	return callerOf(r).exported()
}

// CallerFrom returns who sent the request ctx is the context of, as
// CallerOf does; false outside an authenticated request. The tasks the
// API calls read it to know which agent acted.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(caller)
	return c.exported(), ok
}

// WithCaller is ctx as CallerFrom reads it for c: the tasks' tests, and
// callers in the worker's own process, act as a token's holder.
func WithCaller(ctx context.Context, c Caller) context.Context {
	in := caller{name: c.Name, id: c.ID, role: c.Role, open: c.Open}
	if c.Task != "" {
		in.run = &runcred.Claims{Task: c.Task, Role: c.Role, Agent: c.Name}
	}
	return context.WithValue(ctx, callerKey{}, in)
}

// Decode reads r's body, bounded by the server's limit, into v: exactly
// one JSON object with no unknown fields. Its errors name the field.
func (s *Server) Decode(w http.ResponseWriter, r *http.Request, v any) error {
	return s.decodeBody(w, r, v)
}

// Error answers with err in the API's error form: a *task.Error's code
// sets the status (the API's table and the added Spec.Codes); any other
// error is a logged 500.
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) { s.writeError(w, r, err) }

// WriteJSON answers with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// CallerFor returns who an Authorization header's bearer token belongs
// to, as the API's own routes see it; false when no token matches. With
// no tokens configured every header is the open caller. A handler that
// acts for its caller later, outside the request (the MCP server's
// tools), reads the caller again from the same header.
func (s *Server) CallerFor(authorization string) (Caller, bool) {
	c, ok, err := s.match(authorization)
	return c.exported(), ok && err == nil
}
