// Package dashboard is ampflow's admin dashboard: server-rendered pages of
// the open decisions, the tasks and each task's record, read from the SSOT
// and kept live with server-sent events. Admins decide, cancel and replan
// from it through the same workflow calls as every other channel. It is
// mounted on the HTTP API's server at / and checks its own requests: a
// session cookie from an API token, a CSRF token on every form, and no
// cross-site requests.
package dashboard

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Channel is the decision.Answer.Channel of answers given here.
const Channel = "dashboard"

// Records is what the dashboard reads of the SSOT (*ssot.DB).
type Records interface {
	Pending(ctx context.Context, p ssot.Page) ([]ssot.PendingDecision, string, error)
	TaskList(ctx context.Context, f ssot.TaskFilter, p ssot.Page) ([]ssot.TaskState, string, error)
	TaskStates(ctx context.Context, ids []string) (map[string]json.RawMessage, error)
	Task(ctx context.Context, taskID string) (ssot.TaskState, error)
	History(ctx context.Context, taskID string, p ssot.Page) ([]ssot.Record, string, error)
	Head(ctx context.Context, taskID string) (ssot.Head, error)
	Verify(ctx context.Context, taskID string) (ssot.Head, error)
	Get(ctx context.Context, id string) (ssot.Record, error)
	File(ctx context.Context, taskID, name string) ([]byte, error)
	TaskRefusals(ctx context.Context, taskID string, limit int) ([]ssot.ErrorEntry, error)
	RefusalsAfter(ctx context.Context, seq int64) ([]string, error)
	Marks(ctx context.Context) (ssot.Marks, error)
}

var _ Records = (*ssot.DB)(nil)

// Actions are the workflow calls the dashboard makes (workflows.Tasks has
// them): answers go to the decision engine of the decision's subject.
type Actions interface {
	Decide(ctx context.Context, subject string, in decision.Answer) (task.DecideResult, error)
	Cancel(ctx context.Context, taskID string, in task.CancelInput) (task.ChangeResult, error)
	Replan(ctx context.Context, taskID string, in task.ReplanInput) (task.ChangeResult, error)
	// StartNext starts a task under the year's next free id.
	StartNext(ctx context.Context, in task.Input, year int) (string, error)
}

// Panel fills one of the pages of the systems beside tasks (gates, leases,
// agents, mesh, goals). A page without a Panel shows its empty state.
type Panel interface {
	// Table is what the page lists now.
	Table(ctx context.Context) (Table, error)
}

// Table is a Panel's listing: column headings and rows of cells.
type Table struct {
	Columns []string
	Rows    [][]Cell
}

// Cell is one value of a Table; a non-zero Time is shown in the viewer's
// zone and relative to now, Href makes it a link, an Action is a button
// that admins see, and Lines make it a list.
type Cell struct {
	Text   string
	Time   time.Time
	Href   string
	Action *Action
	// Lines, when set, are shown as a list, a line per entry, each its
	// cells side by side.
	Lines [][]Cell
}

// Action is a button posting a form (with the session's CSRF token) to
// Path, one of the dashboard's admin routes.
type Action struct {
	Path, Label string
	// Name is the button's accessible name, saying what it acts on.
	Name string
}

// Panel names.
const (
	PanelGates  = "gates"
	PanelLeases = "leases"
	PanelAgents = "agents"
	PanelMesh   = "mesh"
	PanelGoals  = "goals"
)

// Options configure a Server. Store and Actions are required.
type Options struct {
	Store   Records
	Actions Actions
	// Tokens are the API tokens that sign in; none signs every request in
	// as OpenName, an admin (`ampflow dev`).
	Tokens   []config.AuthToken
	OpenName string
	// MaxRejects is the reject count that locks a task (protocol.max_rejects).
	MaxRejects int
	// Panels fill the gates, leases, agents and mesh pages by name.
	Panels map[string]Panel
	// Leases releases a lease from the Leases page; nil refuses.
	Leases LeaseReleaser
	// Messages keeps what the task page's form sends a task's running
	// agent, and Steer tells the task of it; nil Messages refuses.
	Messages httpapi.TaskMessages
	Steer    httpapi.Steerer
	Logger   *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Poll is how often the store's marks are read for live events; zero
	// is DefaultPoll.
	Poll time.Duration
	// SessionTTL bounds a sign-in; zero is DefaultSessionTTL.
	SessionTTL time.Duration
	// Warnings are shown at the top of every page: what the admins must
	// know of how the worker runs, such as a runner role without its
	// sandbox (agents.<role>.sandbox: off).
	Warnings []string
}

// DefaultPoll is how often the store is looked at for changes: pages
// hear of a change written by any worker within about this long.
const DefaultPoll = 300 * time.Millisecond

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 12 * time.Hour

// Server serves the dashboard. Build it with New, mount its Routes on
// the HTTP API and run Watch beside it.
type Server struct {
	store      Records
	actions    Actions
	auth       *auth
	maxRejects int
	panels     map[string]Panel
	leases     LeaseReleaser
	messages   httpapi.TaskMessages
	steer      httpapi.Steerer
	log        *slog.Logger
	now        func() time.Time
	poll       time.Duration
	hub        *hub
	pages      pages
	cards      *cardCache
	verified   *verifyCache
	// looked is closed once Watch has read the store's marks: changes
	// after it are published.
	looked     chan struct{}
	lookedOnce sync.Once
	// signIns counts failed sign-ins per client address.
	signIns *failedSignIns
	// warnings are Options.Warnings.
	warnings []string
}

// New builds a Server, to serve alone with Handler or on the API with
// Register.
func New(o Options) *Server {
	s := &Server{
		store: o.Store, actions: o.Actions, maxRejects: o.MaxRejects, panels: o.Panels, messages: o.Messages, steer: o.Steer,
		leases: o.Leases, log: o.Logger, now: o.Now, poll: o.Poll, warnings: o.Warnings,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.signIns = &failedSignIns{now: func() time.Time { return s.now() }}
	if s.poll <= 0 {
		s.poll = DefaultPoll
	}
	ttl := o.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	s.auth = newAuth(o.Tokens, o.OpenName, ttl, s.now)
	s.hub = newHub(hubSize)
	s.looked = make(chan struct{})
	s.cards = newCardCache()
	s.verified = &verifyCache{m: map[string]verified{}}
	s.pages = parsePages()
	return s
}

// Register builds the dashboard and mounts its Routes on api beside the
// API's own; the caller runs its Watch.
func Register(api *httpapi.Server, o Options) *Server {
	s := New(o)
	for _, r := range s.Routes() {
		api.Mount(r.Pattern, r.Handler)
	}
	return s
}

// Route is one pattern of the dashboard and its handler.
type Route struct {
	Pattern string
	Handler http.Handler
}

// Routes are the dashboard's patterns, for the HTTP API's Mount: each
// handler checks its own requests.
func (s *Server) Routes() []Route {
	page := func(h func(http.ResponseWriter, *http.Request, viewer)) http.Handler { return s.page(h) }
	form := func(admin bool, h func(http.ResponseWriter, *http.Request, viewer)) http.Handler {
		return s.form(admin, h)
	}
	return []Route{
		{"GET /{$}", page(s.decisionsPage)},
		{"GET /tasks", page(s.tasksPage)},
		{"GET /tasks/new", page(s.startPage)},
		{"GET /tasks/{id}", page(s.taskPage)},
		{"GET /tasks/{id}/transcript/events", page(s.transcriptEvents)},
		{"GET /records/{id}", page(s.recordBody)},
		{"GET /tasks/{id}/diffs/{msg}", page(s.diffPage)},
		{"GET /tasks/{id}/ci/logs/{commit}", page(s.ciLogPage)},
		{"GET /gates", page(s.panelPage(PanelGates))},
		{"GET /leases", page(s.panelPage(PanelLeases))},
		{"GET /agents", page(s.panelPage(PanelAgents))},
		{"GET /mesh", page(s.panelPage(PanelMesh))},
		{"GET /goals", page(s.panelPage(PanelGoals))},
		{"GET /events", page(s.events)},
		{"POST /decisions/{id}", form(true, s.decide)},
		{"POST /tasks", form(true, s.start)},
		{"POST /tasks/{id}/cancel", form(true, s.cancel)},
		{"POST /tasks/{id}/replan", form(true, s.replan)},
		{"POST /tasks/{id}/say", form(true, s.say)},
		{"POST /leases/{id}/release", form(true, s.releaseLease)},
		{"POST /signout", form(false, s.signOut)},
		{"GET /signin", s.guarded(http.HandlerFunc(s.signInPage))},
		{"POST /signin", s.guarded(http.HandlerFunc(s.signIn))},
		{"GET /static/", s.guarded(staticHandler())},
	}
}

// Handler serves the dashboard alone (tests, benchmarks): its Routes on a
// mux of their own.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	return mux
}
