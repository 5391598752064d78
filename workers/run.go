package workers

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/delivery"
	gateacts "github.com/ampflow/ampflow/activities/gate"
	leaseacts "github.com/ampflow/ampflow/activities/lease"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/config/pricing"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/decide"
	"github.com/ampflow/ampflow/workflows/gate"
	"github.com/ampflow/ampflow/workflows/lease"
)

// Options for Run.
type Options struct {
	Config   config.Config
	Temporal client.Client
	Logger   *slog.Logger
	// Metrics is the registry /metrics serves; the Temporal client should
	// have been dialed with its TemporalHandler. Nil makes a fresh one.
	Metrics *httpapi.Metrics
	// Endpoint, when set, is told each endpoint once it serves.
	Endpoint func(name, addr string)
	// LocalName is who an HTTP API with no auth.tokens acts as; empty is
	// httpapi.OpenName. `ampflow dev` passes the operating-system user.
	LocalName string
	// ContractSecretFile keeps a contract signing secret made on first use
	// when gate.contract_secret_env names an unset variable; empty makes
	// none (contracts are then not served). `ampflow dev` sets it.
	ContractSecretFile string
	// DecisionKeyFile keeps a decision key made on first use when neither
	// auth.decision_key nor auth.decision_key_file is set; empty makes
	// none, and Build fails without a key. `ampflow dev` sets it.
	DecisionKeyFile string
}

// Parts are the pieces Run builds, exposed for tests and the demo.
type Parts struct {
	// Store is the SSOT database (ssot.url); Close closes it.
	Store      *ssot.DB
	Tasks      *workflows.Client
	Activities *activities.Activities
	// Lease is the lease store the workers share: the bots' long polling
	// and Socket Mode run on one worker at a time. Build sets it to the
	// SSOT; without it (tests) each worker runs them.
	Lease Lease
	// ChatState is the SSOT the workers share, where the bots keep their
	// state (decisions and buttons posted, note prompts, notices claimed
	// once), so any worker answers any click and nothing is posted twice.
	// Build sets it; the bots need it.
	ChatState *ssot.DB
	// Gate are the action gate's activities.
	Gate *gateacts.Gate
	// Expiries wakes the lease sweeper for the leases taken directly in
	// the store (branches, agents' keys).
	Expiries *lease.Expiries

	// contractSecret signs contracts: gate.contract_secret_env's value,
	// else the one kept in Options.ContractSecretFile; empty serves none.
	contractSecret string

	export *exportQueue
}

// Close closes what Build opened.
func (p *Parts) Close() error {
	if p.export != nil {
		p.export.close()
	}
	return p.Store.Close()
}

// Build makes the parts of a runtime from the configuration.
func Build(o Options) (*Parts, error) {
	cfg := o.Config
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := PrivateDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	url := cfg.SSOT.URL
	if url == "" {
		url = filepath.Join(cfg.DataDir, config.DefaultSSOTFile)
	}
	store, err := ssot.Open(context.Background(), url)
	if err != nil {
		return nil, fmt.Errorf("opening the SSOT (ssot.url): %w", err)
	}
	contractSecret, err := resolveContractSecret(cfg, o.ContractSecretFile)
	if err != nil {
		store.Close()
		return nil, err
	}
	decisionKey, err := resolveDecisionKey(cfg, o.DecisionKeyFile)
	if err != nil {
		store.Close()
		return nil, err
	}
	// Record hashes are keyed: an agent that reached the database could
	// rewrite a record, not its hash.
	store.KeyChain(decisionKey)
	record := &activities.TaskRecord{Store: store, APIURL: diffBaseURL(cfg), Mesh: true}
	var export *exportQueue
	if cfg.SSOT.Git.Commit || cfg.SSOT.Git.Push {
		exp, err := activities.NewExporter(store, activities.ExportOptions{Dir: cfg.SSOT.Git.Dir, Push: cfg.SSOT.Git.Push, Remote: cfg.SSOT.Git.Remote,
			ChainKey: ssot.ChainKey(decisionKey)})
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("ssot.git: %w", err)
		}
		export = startExport(exp, log)
		record.Written = export.mark
	}
	git := &activities.Git{Diffs: record, Mirrors: activities.MirrorsDir(cfg.DataDir)}
	// Output of code ampflow runs never shows a configured secret, nor
	// the contract secret or decision key `ampflow dev` made.
	secrets := child.NewScrubber(append(cfg.Secrets(), contractSecret, hex.EncodeToString(decisionKey)))
	ci, err := activities.NewCIProvider(cfg.CI.Provider, activities.CIOptions{
		GitHubToken:    cfg.CI.GitHub.Token,
		GitHubBaseURL:  githubBase(cfg.CI.GitHub.APIURL),
		GitHubRepo:     cfg.CI.GitHub.Repo,
		Command:        cfg.CI.Command.Run,
		CommandTimeout: cfg.CI.Command.Timeout,
		CommandEnv:     cfg.CI.Command.Env,
		Secrets:        secrets,
		Store:          record,
		Git:            git,
	})
	if err != nil {
		if export != nil {
			export.close()
		}
		store.Close()
		return nil, fmt.Errorf("ci.provider: %w", err)
	}
	pusher, pulls, err := deliveryParts(cfg, git, secrets)
	if err != nil {
		if export != nil {
			export.close()
		}
		store.Close()
		return nil, err
	}
	policy := workflows.NewPolicy(cfg)
	// A started task is written in the store before its start answers,
	// with the policy its workflow will record: read-your-writes for
	// every reader of the store.
	tasks := &workflows.Client{Temporal: o.Temporal, TaskQueue: cfg.Temporal.TaskQueue, DecisionKey: decisionKey,
		Recorder: record, Policy: &policy}
	delivery := &delivery.Delivery{
		Executor:   agentDelivery(cfg.Agents.Executor, cfg.DataDir),
		Reviewer:   agentDelivery(cfg.Agents.Reviewer, cfg.DataDir),
		Planner:    plannerDelivery(cfg.Goals.Planner, cfg.DataDir),
		Submit:     tasks,
		Heartbeats: tasks,
		Usage:      tasks,
		Pricing:    pricing.New(cfg.Pricing.Models, cfg.Pricing.DefaultPrice),
		Git:        git,
		Marks:      store,
		Secrets:    secrets,
		Log:        log,
		Slots:      delivery.NewSlots(cfg.Runner.SlotCount()),
		Accounts:   &delivery.Accounts{},
		Host:       cfg.Runner.HostName(),
		// A sandboxed run sees none of the worker's configuration and
		// key files, wherever they are.
		SandboxHide: cfg.SecretFiles(),
		Refused: func(raw []byte, reason string) {
			entry := ssot.ErrorEntry{Source: "agent-command", Reason: secrets.Scrub(reason), Raw: secrets.Scrub(string(raw))}
			if err := store.AppendError(context.Background(), entry); err != nil {
				log.Error("writing the error log", "error", err)
			}
		},
	}
	if o.Metrics != nil {
		delivery.Metrics = o.Metrics
	}
	delivery.PlannerMaxCostUSD = cfg.Goals.Planner.MaxCostUSD
	delivery.Budgets = runnerBudgets(cfg, store)
	delivery.Steer = store
	delivery.Transcripts = store
	noteMessages(store, log)
	delivery.Credentials = runCredentials(cfg, decisionKey)
	delivery.APIURL = diffBaseURL(cfg)
	delivery.Egress = egress(cfg)
	delivery.Tools = toolHook(cfg, log)
	delivery.MCP = runnerMCP(cfg)
	expiries := &lease.Expiries{Temporal: o.Temporal, TaskQueue: cfg.Temporal.TaskQueue, Log: log}
	branches := leaseacts.Branches{Client: &lease.Client{Temporal: o.Temporal, TaskQueue: cfg.Temporal.TaskQueue, DecisionKey: decisionKey},
		Store: store, Expiry: expiries}
	// A task's last record batch ends its direct branch lease.
	record.Leases = branches
	acts := &activities.Activities{Git: git, CI: ci, Store: record, Delivery: delivery, Log: log, Policy: &policy,
		DecisionKey: decisionKey, Refusals: store, Pusher: pusher, Pulls: pulls, Leases: branches, Marks: store, CIRounds: store,
		Fleet: store}
	if runsAgents(cfg) {
		acts.Host = delivery.Host
		delivery.Pusher = pusher
	}
	// The store is shared by every worker that names it: the bots keep
	// their state in it and take turns under its lease.
	return &Parts{Store: store, Tasks: tasks, Activities: acts, Lease: store, ChatState: store, export: export, Expiries: expiries,
		Gate: gateActivities(cfg, store, log, o.Metrics), contractSecret: contractSecret}, nil
}

// diffBaseURL is where reviewers reach the diffs this worker's API serves:
// the API itself when it listens on loopback (a reviewer on this machine;
// ampflow dev), else api.url, the address clients are given.
func diffBaseURL(cfg config.Config) string {
	if localAPI(cfg) {
		return "http://" + cfg.HTTP.Addr
	}
	return cfg.API.URL
}

// localAPI reports whether the worker's runs reach the API this process
// serves, on loopback (diffBaseURL).
func localAPI(cfg config.Config) bool {
	host, _, err := net.SplitHostPort(cfg.HTTP.Addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// githubBase leaves the public API to the library's default.
func githubBase(u string) string {
	if u == "" || u == "https://api.github.com/" || u == "https://api.github.com" {
		return ""
	}
	return u
}

// runnerBudgets charges runner runs to pricing.budgets (nil without any).
func runnerBudgets(cfg config.Config, store *ssot.DB) *delivery.RunnerBudgets {
	if len(cfg.Pricing.Budgets) == 0 {
		return nil
	}
	limits := make([]ssot.BudgetLimit, 0, len(cfg.Pricing.Budgets))
	for _, b := range cfg.Pricing.Budgets {
		limits = append(limits, ssot.BudgetLimit{Key: ssot.BudgetKey(b.Agent, b.Project, b.Period), Agent: b.Agent,
			Project: b.Project, Period: b.Period, USD: b.USD})
	}
	return &delivery.RunnerBudgets{Store: store, Limits: limits}
}

func agentDelivery(a config.Agent, dataDir string) activities.AgentDelivery {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	return activities.AgentDelivery{Mode: a.Mode, Command: a.Command, WebhookURL: a.WebhookURL, Timeout: a.Timeout,
		Env: a.Env, WebhookSecret: a.WebhookSecret,
		Runner: a.Runner, Model: a.Model, IdleTimeout: a.IdleTimeout, WorkDir: dataDir, Sandbox: a.Sandbox != config.SandboxOff,
		Accounts: a.Accounts}
}

// SetWorkflowCache sizes the cache of workflows kept in memory between
// their workflow tasks (temporal.workflow_cache), which every worker of
// the process shares, an embedded Temporal server's own system workers
// included: the first worker made makes the cache, so this is called
// before the embedded server starts.
func SetWorkflowCache(n int) {
	if n > 0 {
		worker.SetStickyWorkflowCacheSize(n)
	}
}

// plannerDelivery is the goals' planner as the delivery runs it; no
// runner when goals.planner.runner is empty.
func plannerDelivery(p config.Planner, dataDir string) activities.AgentDelivery {
	a := agentDelivery(config.Agent{Mode: config.AgentModeRunner, Runner: p.Runner, Command: p.Command, Model: p.Model,
		Env: p.Env, Timeout: p.Timeout, IdleTimeout: p.IdleTimeout, Sandbox: p.Sandbox}, dataDir)
	if !p.On() {
		a.Runner = ""
	}
	return a
}

// NewWorker registers the task workflow and the activities on a worker
// of the configured task queue. Its update validators check signatures
// with the activities' decision key (decide.Interceptor).
func NewWorker(c client.Client, queue string, acts *activities.Activities, gateActs *gateacts.Gate) worker.Worker {
	checker := &activities.AnswerChecker{Key: acts.DecisionKey, Refusals: acts.Refusals, Log: acts.Log}
	w := worker.New(c, queue, worker.Options{Interceptors: []interceptor.WorkerInterceptor{decide.Interceptor(checker)}})
	w.RegisterWorkflowWithOptions(workflows.Task, workflow.RegisterOptions{Name: task.WorkflowType})
	w.RegisterActivity(acts)
	w.RegisterWorkflowWithOptions(gate.Gate, workflow.RegisterOptions{Name: gate.WorkflowType})
	if gateActs != nil {
		w.RegisterActivity(gateActs)
	}
	registerLeases(w, acts)
	return w
}

// NewHostWorker is a worker of this runner host's own queue
// (activities.HostQueue): it takes the runs of the tasks the host holds.
// It has the activities only; workflows stay on the shared queue.
func NewHostWorker(c client.Client, queue string, acts *activities.Activities) worker.Worker {
	w := worker.New(c, activities.HostQueue(queue, acts.Host), worker.Options{})
	w.RegisterActivity(acts)
	return w
}

// startHostWorker starts the host's worker when this worker runs agent
// CLIs (acts.Host is set); nil when it runs none.
func startHostWorker(c client.Client, queue string, acts *activities.Activities) (worker.Worker, error) {
	if c == nil || acts.Host == "" {
		return nil, nil
	}
	hw := NewHostWorker(c, queue, acts)
	if err := hw.Start(); err != nil {
		return nil, fmt.Errorf("starting the worker on task queue %s: %w", activities.HostQueue(queue, acts.Host), err)
	}
	return hw, nil
}

// Run runs the worker, the HTTP API and the chat integrations until ctx
// ends, then stops them.
func Run(ctx context.Context, o Options) error {
	if err := hideEnvironment(); err != nil {
		return fmt.Errorf("hiding the worker's environment from the processes it runs: %w", err)
	}
	parts, err := Build(o)
	if err != nil {
		return err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	rt, err := newRuntime(o, parts, log)
	if err != nil {
		parts.Close()
		return err
	}
	// Before this worker runs agents: what a crashed one left would work
	// in the same worktrees.
	reaped := ReapRunners(o.Config, log)
	FinishCleanups(o.Config, parts.Store, log)
	SetWorkflowCache(o.Config.Temporal.WorkflowCache)
	w := NewWorker(o.Temporal, o.Config.Temporal.TaskQueue, parts.Activities, parts.Gate)
	registerAOF(w, o, parts)
	registerGoals(w, parts)
	if err := w.Start(); err != nil {
		rt.stop()
		parts.Close()
		return fmt.Errorf("starting the worker on task queue %s: %w", o.Config.Temporal.TaskQueue, err)
	}
	o.endpoint("worker", "task queue "+o.Config.Temporal.TaskQueue)
	hw, err := startHostWorker(o.Temporal, o.Config.Temporal.TaskQueue, parts.Activities)
	if err != nil {
		w.Stop()
		rt.stop()
		parts.Close()
		return err
	}
	if hw != nil {
		o.endpoint("host", "task queue "+activities.HostQueue(o.Config.Temporal.TaskQueue, parts.Activities.Host))
	}
	if o.Temporal != nil {
		// Leases taken directly before a crash end at their expiry.
		if err := parts.Expiries.Ensure(ctx); err != nil {
			log.Warn("starting the lease sweeper", "error", err)
		}
		// Now that this worker takes activities: a dead worker's runs are
		// named on their tasks and delivered again at once.
		RecoverRuns(ctx, reaped, o.Temporal, o.Config.Temporal.Namespace, parts.Tasks, log)
	}
	errc := rt.serve(ctx)
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	if hw != nil {
		hw.Stop()
	}
	w.Stop()
	rt.stop()
	if cerr := parts.Close(); cerr != nil {
		log.Error("closing the SSOT", "error", cerr)
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

func (o Options) endpoint(name, addr string) {
	if o.Endpoint != nil {
		o.Endpoint(name, addr)
	}
}

// stopGrace bounds a clean stop.
const stopGrace = 5 * time.Second

// PrivateDataDir makes data_dir, created when missing, readable by its
// owner only (0700): it holds the keys, the SSOT and Temporal's state.
func PrivateDataDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making data_dir %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("making data_dir %s private: %w", dir, err)
	}
	return nil
}
