// Package mcp serves ampflow's API to agents as Model Context Protocol
// tools, at /mcp on the API (streamable HTTP, stateless). Every tool call
// is a request to the API's own handler, made in the process with the
// caller's bearer token: the tools check, refuse and answer exactly as the
// routes they call, and speak only as that token.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Path is where the API serves MCP.
const Path = "/mcp"

// AgentKeyHeader carries an agent's gate key (gate.agents) on /mcp
// requests. The gate's routes (signals, contracts) take those keys, not
// API tokens, so the tools signal, request_approval, approval_status,
// decide, contract and execute present it; without it they present the
// Authorization header's token, which the gate refuses unless it is also
// a gate key.
const AgentKeyHeader = "X-Ampflow-Agent-Key"

// Options configure the MCP server.
type Options struct {
	// GateAgent names the gate agent an Authorization header's key
	// belongs to, so request_approval can fill agent_id; nil leaves
	// agent_id to the caller.
	GateAgent func(authorization string) (string, bool)
	// Version is the server's version in the MCP handshake.
	Version string
	Logger  *slog.Logger
	// MaxBody bounds a request's body; zero is httpapi.DefaultMaxBody.
	MaxBody int64
	// Now is the clock of the times the tools fill; nil is time.Now.
	Now func() time.Time
}

// Server is the MCP endpoint of one API server.
type Server struct {
	api  *httpapi.Server
	o    Options
	h    *sdk.StreamableHTTPHandler
	once func() (*sdk.Server, error)
}

// Register adds POST /mcp to api, behind its token check and guard.
// Call it after every system's routes are added: the tools' schemas are
// read from the API's OpenAPI document at the first request.
func Register(api *httpapi.Server, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBody <= 0 {
		o.MaxBody = httpapi.DefaultMaxBody
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{api: api, o: o}
	s.once = sync.OnceValues(s.build)
	s.h = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		srv, _ := s.once()
		return srv
	}, &sdk.StreamableHTTPOptions{
		// Stateless: any worker's API answers any request, as for
		// the other routes, and no session outlives its request.
		Stateless:    true,
		JSONResponse: true,
		Logger:       o.Logger,
		// The API's guard checks Host (with no tokens) and Origin
		// for this route as for every other; the SDK's own check
		// would also refuse a proxy's Host on a loopback listener.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        o.MaxBody,
	})
	api.Add(httpapi.Spec{}, httpapi.Route{Pattern: "POST " + Path, Handler: s.serve, Operation: operationDoc()})
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if _, err := s.once(); err != nil {
		s.o.Logger.Error("building the MCP tools", "err", err)
		s.api.Error(w, r, fmt.Errorf("building the MCP tools: %w", err))
		return
	}
	// A tool call may long-poll the inbox: give it the wait on top of
	// the server's timeouts, as GET /v1/inbox does for itself.
	s.api.ExtendDeadlines(w, r, httpapi.MaxWait)
	s.h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), remoteKey{}, r.RemoteAddr)))
}

// remoteKey holds the MCP request's RemoteAddr in the tools' context: the
// API's calls keep the agent's address (its logs, any limit by address).
type remoteKey struct{}

// build makes the MCP server with its tools, their schemas read from the
// API's OpenAPI document.
func (s *Server) build() (*sdk.Server, error) {
	raw, err := s.api.OpenAPI()
	if err != nil {
		return nil, err
	}
	d, err := parseDoc(raw)
	if err != nil {
		return nil, err
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "ampflow", Title: "ampflow", Version: s.o.Version}, &sdk.ServerOptions{
		Instructions: "ampflow's HTTP API as tools, acting as your bearer token's agent: your AMP inbox and replies, " +
			"leases, the mesh chat, and the action gate and risk contracts (these need the " + AgentKeyHeader + " header).",
		Logger: s.o.Logger,
	})
	for _, t := range tools() {
		if _, err := d.op(t.pattern); err != nil {
			// A system this API does not serve (no gate configured).
			s.o.Logger.Debug("MCP tool left out: its route is not served", "tool", t.name, "route", t.pattern)
			continue
		}
		schema, err := t.inputSchema(d)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.name, err)
		}
		srv.AddTool(&sdk.Tool{Name: t.name, Description: t.description(d), InputSchema: schema}, s.call(t))
	}
	return srv, nil
}

// call runs a tool: its input becomes a request to the API's handler
// with the caller's credentials, and the API's answer its result.
func (s *Server) call(t tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var header http.Header
		if req.Extra != nil {
			header = req.Extra.Header
		}
		authz := header.Get("Authorization")
		caller, ok := s.api.CallerFor(authz)
		if !ok {
			// /mcp is behind the token check; a request that got here
			// has a token the API knows.
			return nil, fmt.Errorf("tool %s: the request's token is not the API's", t.name)
		}
		args := map[string]any{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&args); err != nil {
				return errorResult(http.StatusBadRequest, task.Errorf(task.CodeInvalid, "arguments: %v", err)), nil
			}
		}
		if t.gate {
			if key := strings.TrimSpace(header.Get(AgentKeyHeader)); key != "" {
				authz = "Bearer " + key
			}
		}
		who := identity{name: caller.Name, id: caller.ID, now: s.o.Now().UTC().Format(time.RFC3339)}
		if t.gate && s.o.GateAgent != nil {
			who.gateAgent, _ = s.o.GateAgent(authz)
		}
		method, path, query, body, err := t.request(args, who)
		if err != nil {
			return errorResult(http.StatusBadRequest, err), nil
		}
		status, answer := s.dispatch(ctx, method, path, query, body, authz)
		return result(status, answer), nil
	}
}

// request turns a tool's input into the API request: path parameters
// from pathArgs, the rest as query parameters (GET, DELETE) or the JSON
// body.
func (t tool) request(args map[string]any, who identity) (method, path string, query url.Values, body []byte, err error) {
	if t.fill != nil {
		t.fill(args, who)
	}
	method, path, _ = strings.Cut(t.pattern, " ")
	for arg, p := range t.pathArgs {
		v, _ := args[arg].(string)
		if v == "" {
			return "", "", nil, nil, task.Errorf(task.CodeInvalid, "%s: required", arg)
		}
		path = strings.Replace(path, "{"+p+"}", url.PathEscape(v), 1)
		delete(args, arg)
	}
	for strings.Contains(path, "{") {
		start, end := strings.Index(path, "{"), strings.Index(path, "}")
		arg := path[start+1 : end]
		v, _ := args[arg].(string)
		if v == "" {
			return "", "", nil, nil, task.Errorf(task.CodeInvalid, "%s: required", arg)
		}
		path = path[:start] + url.PathEscape(v) + path[end+1:]
		delete(args, arg)
	}
	if method == http.MethodGet || method == http.MethodDelete {
		query = url.Values{}
		for k, v := range args {
			switch v := v.(type) {
			case string:
				query.Set(k, v)
			case json.Number, bool:
				query.Set(k, fmt.Sprint(v))
			default:
				return "", "", nil, nil, task.Errorf(task.CodeInvalid, "%s: must be a string, number or boolean", k)
			}
		}
		return method, path, query, nil, nil
	}
	body, err = json.Marshal(args)
	return method, path, nil, body, err
}

// dispatch sends one request to the API's handler in the process, as if
// the caller had sent it, and returns the status and body of its answer.
func (s *Server) dispatch(ctx context.Context, method, path string, query url.Values, body []byte, authz string) (int, []byte) {
	target := "http://localhost" + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd *bytes.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	} else {
		rd = bytes.NewReader(nil)
	}
	r := httptest.NewRequestWithContext(ctx, method, target, rd)
	r.RemoteAddr = "127.0.0.1:0"
	if addr, ok := ctx.Value(remoteKey{}).(string); ok && addr != "" {
		r.RemoteAddr = addr
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	} else {
		r.ContentLength = 0
	}
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	s.api.Handler().ServeHTTP(rec, r)
	return rec.Code, rec.Body.Bytes()
}

// result is the tool result of the API's answer: its JSON as text and
// as structured content, an error when the status is not 2xx (the API's
// error object, with its code), and the HTTP status in _meta.
func result(status int, body []byte) *sdk.CallToolResult {
	text := strings.TrimSpace(string(body))
	if text == "" {
		text = "{}"
	}
	res := &sdk.CallToolResult{
		Content: []sdk.Content{&sdk.TextContent{Text: text}},
		IsError: status < 200 || status > 299,
		Meta:    sdk.Meta{"http_status": status},
	}
	var v map[string]any
	if json.Unmarshal([]byte(text), &v) == nil {
		res.StructuredContent = v
	}
	return res
}

// errorResult is a refusal of the tool itself, in the API's error form.
func errorResult(status int, err error) *sdk.CallToolResult {
	te, ok := err.(*task.Error)
	if !ok {
		te = &task.Error{Code: task.CodeInvalid, Message: err.Error()}
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": te.Code, "message": te.Message}})
	return result(status, body)
}
