package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ampflow/ampflow/amp/runcred"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat"
	"github.com/ampflow/ampflow/integrations/dashboard"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/intake"
	"github.com/ampflow/ampflow/integrations/mcp"
	"github.com/ampflow/ampflow/integrations/slack"
	"github.com/ampflow/ampflow/integrations/statushook"
	"github.com/ampflow/ampflow/integrations/telegram"
	"github.com/ampflow/ampflow/workflows"
	goalwf "github.com/ampflow/ampflow/workflows/goal"
)

// runtime holds what serves beside the worker: the HTTP API and the chat
// transport loops.
type runtime struct {
	log   *slog.Logger
	http  *http.Server
	ln    net.Listener
	loops []func(context.Context) error
	// gateAgent names the gate agent of a bearer key, once the gate is
	// added (the MCP server's request_approval fills agent_id with it).
	gateAgent func(authorization string) (string, bool)
	// intake is the GitHub issues intake, nil when off; the webhook hands
	// it the issues' deliveries.
	intake *intake.GitHub
}

func newRuntime(o Options, parts *Parts, log *slog.Logger) (*runtime, error) {
	rt := &runtime{log: log}
	mounts, err := startChat(o, parts, rt, log)
	if err != nil {
		return nil, err
	}
	if parts.Store != nil && parts.Tasks != nil && parts.Tasks.Temporal != nil {
		sw := sweep{store: parts.Store, running: parts.Tasks.Running, interval: o.Config.SSOT.SweepInterval, log: log}
		rt.loops = append(rt.loops, leased(parts.Lease, LeaseSweep, NewHolder(), log, sw.run))
	}
	if d, ok := parts.Activities.Delivery.(*delivery.Delivery); ok && runsAgents(o.Config) && parts.Store != nil {
		f := fleetHost{store: parts.Store, slots: d.Slots, host: d.Host, started: time.Now(), log: log}
		rt.loops = append(rt.loops, f.run)
		o.endpoint("runner host", fmt.Sprintf("%s, %d slots (runner.slots)", d.Host, d.Slots.Size()))
	}
	if rt.intake, err = gitHubIntake(o, parts, log); err != nil {
		return nil, err
	}
	if rt.intake != nil {
		rt.loops = append(rt.loops, leased(parts.Lease, LeaseIntake, NewHolder(), log, rt.intake.Run))
		o.endpoint("intake", fmt.Sprintf("github issues of %d repositories, every %s", len(o.Config.Intake.GitHub.Repos), o.Config.Intake.GitHub.PollInterval))
	}
	addr := o.Config.HTTP.Addr
	if addr == "" {
		if len(mounts) > 0 {
			return nil, errors.New("http.addr: required by the Slack HTTP mode or the Telegram webhook mode")
		}
		return rt, nil
	}
	api, dash, err := buildAPI(o, parts, mounts, rt, log)
	if err != nil {
		return nil, err
	}
	if err := api.LoopbackOnly(addr); err != nil {
		return nil, fmt.Errorf("http.addr: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http.addr %s: %w", addr, err)
	}
	rt.ln = ln
	rt.http = api.HTTPServer()
	api.LogStart(ln.Addr().String())
	note := ""
	if len(o.Config.Auth.Tokens) == 0 {
		note = " (no auth.tokens: open, loopback only)"
	}
	o.endpoint("http api", "http://"+ln.Addr().String()+note)
	if dash {
		o.endpoint("dashboard", "http://"+ln.Addr().String()+"/"+note)
	}
	return rt, nil
}

// buildAPI builds the HTTP API with every system's routes (AOF, the
// action gate, leases and the mesh, risk contracts), the chat mounts and
// the dashboard, which it reports.
func buildAPI(o Options, parts *Parts, mounts map[string]http.Handler, rt *runtime, log *slog.Logger) (*httpapi.Server, bool, error) {
	opts := httpapi.Options{
		Tasks: withProgress(parts.Tasks, parts.Store, log), Store: parts.Store, Tokens: o.Config.Auth.Tokens, Logger: log, Metrics: o.Metrics,
		OpenName: o.LocalName, Rate: o.Config.HTTP.Rate, RunKey: runKey(parts),
	}
	if parts.Store != nil {
		opts.Messages = parts.Store
	}
	if parts.Tasks != nil {
		opts.Steer = parts.Tasks
	}
	api := httpapi.New(opts)
	addAOF(api, o, parts, log)
	if err := addGate(api, rt, o, parts, log); err != nil {
		return nil, false, err
	}
	addMesh(api, parts, log)
	addFleet(api, parts, log)
	addGoals(api, o, parts, log)
	if err := addToolCalls(api, o, parts); err != nil {
		return nil, false, err
	}
	if err := addContracts(api, o, parts, log); err != nil {
		return nil, false, err
	}
	addTranscripts(api, parts)
	// Last: its tools are built from every system's routes.
	mcp.Register(api, mcp.Options{GateAgent: rt.gateAgent, Logger: log})
	for path, h := range mounts {
		api.Mount("POST "+path, h)
	}
	mountGitHubWebhook(o, parts, rt.intake, api, log)
	return api, mountDashboard(o, parts, api, rt, log), nil
}

// runKey checks runner runs' credentials: the key runCredentials mints
// them with.
func runKey(parts *Parts) []byte {
	if parts.Tasks == nil || len(parts.Tasks.DecisionKey) == 0 {
		return nil
	}
	return runcred.Key(parts.Tasks.DecisionKey)
}

// serve starts the HTTP server and the loops; the first failure is sent.
func (rt *runtime) serve(ctx context.Context) <-chan error {
	errc := make(chan error, 1+len(rt.loops))
	if rt.http != nil {
		go func() {
			if err := rt.http.Serve(rt.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("http api: %w", err)
			}
		}()
	}
	for _, loop := range rt.loops {
		go func() {
			if err := loop(ctx); err != nil && ctx.Err() == nil {
				errc <- err
			}
		}()
	}
	return errc
}

func (rt *runtime) stop() {
	if rt.http == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	if err := rt.http.Shutdown(ctx); err != nil {
		rt.log.Warn("stopping the http api", "error", err)
	}
}

// startChat builds the Slack and Telegram bots that are enabled: they
// become the activities' notifier, their loops run beside the worker, and
// the handlers returned (path → handler) are mounted on the HTTP API.
func startChat(o Options, parts *Parts, rt *runtime, log *slog.Logger) (map[string]http.Handler, error) {
	cfg := o.Config
	if (cfg.Slack.Enabled || cfg.Telegram.Enabled) && parts.ChatState == nil {
		return nil, errors.New("the chat bots keep their state in the SSOT: Parts.ChatState is required")
	}
	mounts := map[string]http.Handler{}
	var notifiers notify.Notifiers
	holder := NewHolder()
	if cfg.Slack.Enabled {
		sc := cfg.Slack
		sc.Admins = cfg.SlackAdmins()
		b, err := slack.New(sc, decider(parts), log, parts.ChatState)
		if err != nil {
			return nil, fmt.Errorf("slack: %w", err)
		}
		notifiers = append(notifiers, b)
		if cfg.Slack.Mode == config.SlackModeHTTP {
			rt.loops = append(rt.loops, b.Run)
			mounts[slack.InteractionsPath] = b.Handler()
		} else {
			rt.loops = append(rt.loops, leased(parts.Lease, LeaseSlackSocket, holder, log, b.Run))
		}
		o.endpoint("slack", cfg.Slack.Mode+" mode, channel "+cfg.Slack.Channel)
	}
	if cfg.Telegram.Enabled {
		tc := cfg.Telegram
		tc.Admins = cfg.TelegramAdmins()
		b, err := telegram.New(tc, decider(parts), log, parts.ChatState)
		if err != nil {
			return nil, fmt.Errorf("telegram: %w", err)
		}
		notifiers = append(notifiers, b)
		if cfg.Telegram.Mode == config.TelegramModeWebhook {
			rt.loops = append(rt.loops, b.Run)
			mounts[telegram.WebhookPath] = b.Handler()
		} else {
			rt.loops = append(rt.loops, leased(parts.Lease, LeaseTelegramPolling, holder, log, b.Run))
		}
		o.endpoint("telegram", cfg.Telegram.Mode+" mode, chat "+cfg.Telegram.ChatID)
	}
	if len(cfg.Notify.Webhooks) > 0 {
		hooks, err := statusHooks(cfg.Notify.Webhooks)
		if err != nil {
			return nil, err
		}
		notifiers = append(notifiers, hooks)
		o.endpoint("webhooks", fmt.Sprintf("%d status webhooks", len(hooks.Hooks)))
	}
	if len(notifiers) > 0 {
		parts.Activities.Notifier = notifiers
	}
	return mounts, nil
}

// leased runs loop under the lease name when the workers share a lease
// store, so one worker at a time runs it; without one, it runs loop as
// it is. Only the bots' pull transports need it: in the HTTP and webhook
// modes the platform posts to whichever worker it reaches.
func leased(lease Lease, name, holder string, log *slog.Logger, loop func(context.Context) error) func(context.Context) error {
	if lease == nil {
		return loop
	}
	l := &Leader{Lease: lease, Name: name, Holder: holder, Log: log}
	return func(ctx context.Context) error { return l.Run(ctx, loop) }
}

// storeDecider is what the bots decide through: answers go to the
// workflows, and the open decisions are read from the SSOT's index
// rather than from every running workflow.
type storeDecider struct {
	tasks *workflows.Client
	store *ssot.DB
}

func (d storeDecider) Decide(ctx context.Context, subject string, in decision.Answer) (task.DecideResult, error) {
	return d.tasks.Decide(ctx, subject, in)
}

// Pending reads every open decision, a page at a time.
func (d storeDecider) Pending(ctx context.Context) ([]decision.Decision, error) {
	var out []decision.Decision
	cursor := ""
	for {
		rows, next, err := d.store.Pending(ctx, ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("reading the open decisions: %w", err)
		}
		for _, r := range rows {
			var dec decision.Decision
			if err := json.Unmarshal(r.Body, &dec); err != nil {
				return nil, fmt.Errorf("open decision %s: %w", r.ID, err)
			}
			out = append(out, dec)
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

// decider is the bots' way to the decisions: the SSOT's index when the
// worker has the store, else the workflows themselves.
func decider(parts *Parts) chat.Decider {
	if parts.Store != nil {
		return storeDecider{tasks: parts.Tasks, store: parts.Store}
	}
	return parts.Tasks
}

// mountDashboard serves the dashboard at / beside the API when the worker
// has the store to read and the workflows to act on; its watcher runs
// with the other loops.
func mountDashboard(o Options, parts *Parts, api *httpapi.Server, rt *runtime, log *slog.Logger) bool {
	cfg := o.Config.Dashboard
	if !cfg.Enabled || parts.Store == nil || parts.Tasks == nil {
		return false
	}
	panels := map[string]dashboard.Panel{dashboard.PanelGates: dashboard.GatesPanel(parts.Store),
		dashboard.PanelRunners: dashboard.RunnersPanel(runnerRoles(o.Config), dashboardFleet{parts.Store}, parts.Store, workerAccounts(parts), nil),
		dashboard.PanelHosts:   dashboard.HostsPanel(dashboardFleet{parts.Store}, nil)}
	if parts.Tasks.Temporal != nil {
		panels[dashboard.PanelGoals] = goalsPanel{goals: &goalwf.Client{Temporal: parts.Tasks.Temporal, TaskQueue: o.Config.Temporal.TaskQueue},
			tasks: parts.Tasks, log: log}
	}
	do := dashboard.Options{
		Store: parts.Store, Actions: parts.Tasks, Tokens: o.Config.Auth.Tokens, OpenName: o.LocalName,
		MaxRejects: o.Config.Protocol.MaxRejects, Logger: log, Poll: cfg.PollInterval, SessionTTL: cfg.SessionTTL,
		Panels: panels, Leases: meshPanels(parts, panels), Warnings: SandboxWarnings(o.Config.Agents),
	}
	if parts.Store != nil {
		do.Messages = parts.Store
	}
	if parts.Tasks != nil {
		do.Steer = parts.Tasks
	}
	d := dashboard.Register(api, do)
	rt.loops = append(rt.loops, d.Watch)
	return true
}

// statusHooks is the notifier of notify.webhooks, each secret read once
// from the variable its secret_env names.
func statusHooks(ws []config.NotifyWebhook) (*statushook.Notifier, error) {
	n := &statushook.Notifier{}
	for i, w := range ws {
		secret := w.Secret()
		if secret == "" {
			return nil, fmt.Errorf("notify.webhooks[%d].secret_env names %s, which is not set", i, w.SecretEnv)
		}
		n.Hooks = append(n.Hooks, statushook.Hook{URL: w.URL, Secret: []byte(secret)})
	}
	return n, nil
}
