// Package httpapi is ampflow's HTTP API: JSON in and out, bearer tokens
// bound to AMP roles, every refused agent message kept in the SSOT error
// log, and Prometheus metrics for the API and the Temporal SDK.
package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows"
)

// DefaultMaxBody is the largest request body accepted when
// Options.MaxBody is zero.
const DefaultMaxBody = 1 << 20

// OpenWarning is logged at start when no tokens are configured.
const OpenWarning = "HTTP API has no tokens configured: every request is accepted as an admin; it must listen on loopback only"

// Records is what the API reads of the SSOT (*ssot.DB), which every worker
// shares: histories, records, agents' inboxes, open decisions and kept
// diffs; and where it keeps refused input.
type Records interface {
	History(ctx context.Context, taskID string, p ssot.Page) ([]ssot.Record, string, error)
	Head(ctx context.Context, taskID string) (ssot.Head, error)
	Get(ctx context.Context, id string) (ssot.Record, error)
	InboxOf(ctx context.Context, f ssot.InboxFilter, p ssot.Page) ([]ssot.OutboxMessage, string, error)
	Pending(ctx context.Context, p ssot.Page) ([]ssot.PendingDecision, string, error)
	TaskList(ctx context.Context, f ssot.TaskFilter, p ssot.Page) ([]ssot.TaskState, string, error)
	File(ctx context.Context, taskID, name string) ([]byte, error)
	AppendError(ctx context.Context, e ssot.ErrorEntry) error
}

var _ Records = (*ssot.DB)(nil)

// Options configure a Server. Tasks is required; the rest has defaults.
type Options struct {
	Tasks workflows.Tasks
	// Messages keeps what people send tasks' running agents (task say,
	// task interrupt); nil answers those routes with 503.
	Messages TaskMessages
	// Steer tells a task of a message sent to its agent.
	Steer Steerer
	// Store serves histories, records, inboxes, decisions and diffs, and
	// keeps refused messages. Nil answers those reads with 503 and logs
	// refusals with slog only.
	Store Records
	// Decisions finds the decision an answer is for, and so the subject it
	// goes to; nil reads it from Store.
	Decisions DecisionLookup
	// Tokens are the accepted bearer tokens. None makes the API open:
	// bind it to loopback (see LoopbackOnly).
	Tokens []config.AuthToken
	// OpenName is who every request acts as when there are no Tokens;
	// empty is OpenName.
	OpenName string
	// RunKey checks agent runs' credentials (runcred.Key of the decision
	// key); nil takes none.
	RunKey []byte
	Logger *slog.Logger
	// Metrics receives the request metrics and serves /metrics; nil
	// makes a fresh one.
	Metrics *Metrics
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// MaxBody bounds request bodies; zero is DefaultMaxBody.
	MaxBody int64
	// PollInterval is how often a long-polling inbox request looks again;
	// zero is 500ms.
	PollInterval time.Duration
	// MaxWait bounds the wait of a long-polling inbox request; zero is
	// MaxWait.
	MaxWait time.Duration
	// ReadTimeout and WriteTimeout bound reading a request and writing its
	// answer (a long poll gets its wait on top); zero is DefaultTimeout.
	ReadTimeout, WriteTimeout time.Duration
	// Rate is the writing requests (POST, PUT, PATCH, DELETE) one token
	// may make a minute, on every route Add's systems included; beyond it
	// 429 rate_limited with Retry-After. Zero is DefaultRate; negative is
	// no limit (the benchmarks).
	Rate int
}

// DefaultTimeout is the server's read and write timeout when Options
// leaves them zero.
const DefaultTimeout = 30 * time.Second

// IdleTimeout is how long a kept-alive connection waits for its next
// request.
const IdleTimeout = 2 * time.Minute

// Server serves the HTTP API. Build it with New.
type Server struct {
	tasks workflows.Tasks
	store Records
	// messages keeps the messages for tasks' agents.
	messages TaskMessages
	steerer  Steerer
	// decisions routes answers to their decisions' subjects.
	decisions DecisionLookup
	tokens    []token
	runKey    []byte
	// openName is who requests act as when there are no tokens.
	openName string
	log      *slog.Logger
	metrics  *Metrics
	now      func() time.Time
	maxBody  int64
	poll     time.Duration
	maxWait  time.Duration
	readTO   time.Duration
	writeTO  time.Duration
	mux      *http.ServeMux
	// mounted are the patterns of Mount: their handlers check requests
	// themselves.
	mounted map[string]bool
	// patterns are the API's routes in the order they were registered,
	// Add's included (Mount's are not among them).
	patterns []string
	// statusOf maps error codes to statuses: the API's table and the
	// codes of Add's systems.
	statusOf map[task.Code]int
	added    added
	// limit bounds each token's writing requests; nil is no limit.
	limit *Limiter
	// auth is each route's identity, by pattern.
	auth map[string]routeAuth
	// agentKeys tell the keys of the agent-key routes.
	agentKeys []func(authorization string) bool
}

// New builds a Server and registers its routes.
func New(o Options) *Server {
	s := &Server{
		tasks:    o.Tasks,
		store:    o.Store,
		messages: o.Messages,
		steerer:  o.Steer,
		tokens:   hashTokens(o.Tokens),
		runKey:   o.RunKey,
		log:      o.Logger,
		metrics:  o.Metrics,
		now:      o.Now,
		maxBody:  o.MaxBody,
		poll:     o.PollInterval,
		maxWait:  o.MaxWait,
		readTO:   o.ReadTimeout,
		writeTO:  o.WriteTimeout,
		mux:      http.NewServeMux(),
		mounted:  map[string]bool{},
		auth:     map[string]routeAuth{},
		statusOf: maps.Clone(statusOf),
		added:    added{ops: map[string]map[string]any{}, routes: map[string]Route{}, schemas: map[string]any{}},
	}
	if s.decisions = o.Decisions; s.decisions == nil {
		s.decisions = storedDecisions{store: o.Store}
	}
	if s.openName = o.OpenName; s.openName == "" {
		s.openName = OpenName
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	if s.poll <= 0 {
		s.poll = 500 * time.Millisecond
	}
	if s.maxWait <= 0 {
		s.maxWait = MaxWait
	}
	if s.readTO <= 0 {
		s.readTO = DefaultTimeout
	}
	if s.writeTO <= 0 {
		s.writeTO = DefaultTimeout
	}
	switch {
	case o.Rate == 0:
		s.limit = NewLimiter(DefaultRate, time.Minute)
	case o.Rate > 0:
		s.limit = NewLimiter(o.Rate, time.Minute)
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	anyone := []amp.Role{}
	coordinators := []amp.Role{amp.RoleCoordinator, amp.RoleAdmin}
	admins := []amp.Role{amp.RoleAdmin}

	// Readable without a token: neither holds a secret.
	s.open("GET /healthz", s.healthz)
	s.open("GET /v1/openapi.json", s.openAPI)
	// With tokens configured, metrics need one (any role).
	s.handle("GET /metrics", anyone, s.metrics.handler().ServeHTTP)
	s.handle("GET /v1/whoami", anyone, s.whoami)

	s.handle("POST /v1/tasks", coordinators, s.startTask)
	s.handle("GET /v1/tasks", anyone, s.listTasks)
	s.handle("GET /v1/tasks/{id}", anyone, s.getTask)
	s.handle("GET /v1/tasks/{id}/history", anyone, s.taskHistory)
	s.handle("GET /v1/tasks/{id}/diffs/{msg_id}", anyone, s.taskDiff)
	s.handle("GET /v1/tasks/{id}/ci", anyone, s.taskCI)
	s.handle("GET /v1/tasks/{id}/ci/logs/{commit}", anyone, s.taskCILog)
	s.handle("POST /v1/tasks/{id}/cancel", coordinators, s.cancelTask)
	s.handle("POST /v1/tasks/{id}/replan", coordinators, s.replanTask)
	s.handle("GET /v1/records/{id}", anyone, s.getRecord)

	// Agents' input: the role check is on the record's from, inside.
	s.handle("POST /v1/messages", anyone, s.postMessage)
	s.handle("POST /v1/acks", anyone, s.postAck)
	s.handle("POST /v1/heartbeats", anyone, s.postHeartbeat)
	s.handle("GET /v1/inbox", anyone, s.inbox)

	s.handle("GET /v1/decisions", anyone, s.listDecisions)
	s.handle("POST /v1/decisions/{id}", admins, s.decide)

	s.steerRoutes(coordinators, admins)
}

// handle registers an API route behind authentication; roles, when not
// empty, are the only token roles allowed.
func (s *Server) handle(pattern string, roles []amp.Role, h func(http.ResponseWriter, *http.Request)) {
	var next http.Handler = http.HandlerFunc(h)
	if writing(pattern) {
		next = s.limited(tokenKey, next)
	}
	s.mux.Handle(pattern, s.authenticate(pattern, roles, next))
	s.patterns = append(s.patterns, pattern)
	s.auth[pattern] = routeAuth{identity: IdentityToken, roles: roles}
}

// open registers an API route that needs no token.
func (s *Server) open(pattern string, h func(http.ResponseWriter, *http.Request)) {
	var next http.Handler = http.HandlerFunc(h)
	if writing(pattern) {
		next = s.limited(credentialKey, next)
	}
	s.mux.Handle(pattern, next)
	s.patterns = append(s.patterns, pattern)
	s.auth[pattern] = routeAuth{identity: IdentityNone}
}

// Patterns returns the API's routes as "METHOD /path" patterns, without
// those added by Mount. The OpenAPI document has an entry for each.
func (s *Server) Patterns() []string { return slices.Clone(s.patterns) }

// Mount adds a handler that does its own authentication and checks its
// own input, such as the Slack and Telegram webhooks with their formats and
// signatures: the API's Content-Type, Origin and Host checks (guard) do not
// apply to it. Call it before serving.
func (s *Server) Mount(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.mounted[pattern] = true
}

// Handler returns the API with request metrics and JSON errors for
// unknown paths and methods.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// HTTPServer returns an http.Server for the API with every timeout set.
// The write timeout bounds ordinary answers; a long-polling inbox request
// extends its own deadlines by its wait.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: min(10*time.Second, s.readTO),
		ReadTimeout:       s.readTO,
		WriteTimeout:      s.writeTO,
		IdleTimeout:       IdleTimeout,
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusWriter{ResponseWriter: w}
	route := "unmatched"
	_, pattern := s.mux.Handler(r)
	if pattern != "" {
		route = pattern
	}
	switch err := s.guard(r); {
	case s.mounted[pattern]:
		s.mux.ServeHTTP(rw, r)
	case err != nil:
		s.writeError(rw, r, err)
	case pattern != "":
		s.mux.ServeHTTP(rw, r)
	default:
		s.unmatched(rw, r)
	}
	s.metrics.observe(route, rw.code(), time.Since(start))
}

// unmatched answers the mux's own 404 and 405 in the API's JSON form.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	h, _ := s.mux.Handler(r)
	c := &captureWriter{header: http.Header{}}
	h.ServeHTTP(c, r)
	if c.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", c.header.Get("Allow"))
		s.writeError(w, r, task.Errorf(codeMethodNotAllowed, "%s is not allowed on %s; allowed: %s",
			r.Method, r.URL.Path, c.header.Get("Allow")))
		return
	}
	s.writeError(w, r, task.Errorf(task.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// LoopbackOnly refuses a listen address that is not on loopback when no
// tokens are configured, so an open API is never reachable from outside.
func (s *Server) LoopbackOnly(addr string) error {
	if len(s.tokens) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("checking HTTP listen address %s: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("checking HTTP listen address %s: no API tokens are configured, so it must be a loopback address such as 127.0.0.1", addr)
}

// LogStart logs that the API listens on addr, with OpenWarning when no
// tokens are configured.
func (s *Server) LogStart(addr string) {
	s.log.Info("HTTP API listening", "addr", addr, "tokens", len(s.tokens))
	if len(s.tokens) == 0 {
		s.log.Warn(OpenWarning, "addr", addr)
	}
}

// statusWriter remembers the status code for the metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush,
// deadlines) through the wrapper.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// captureWriter holds a response so it can be rewritten.
type captureWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}
