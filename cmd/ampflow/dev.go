package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/cmd/ampflow/cli"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workers"
)

// devCommand runs everything in one process on an embedded Temporal
// server. It lives here, not in package cli, because it links the server.
func devCommand(a *cli.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run ampflow on one machine: embedded Temporal (SQLite), Web UI, worker and HTTP API",
		Long: `Run ampflow on one machine, with no Docker and no network beyond loopback:
an embedded Temporal server keeping its state in DATA_DIR/temporal.db (SQLite),
the Temporal Web UI, the ampflow worker, the HTTP API, and the Slack and
Telegram integrations when they are configured. Tasks survive a restart on
the same data dir. Stop with Ctrl-C. Go's garbage collector runs at
GOGC=50 unless GOGC is set: the process holds less memory for a little CPU.

With no admin configured (admins, slack.admins, telegram.admins, admin
tokens), the operating-system user is the admin, and says so at start. The
HTTP API with no auth.tokens acts as that user too.

--temporal-db keeps Temporal's state on PostgreSQL instead (see ampflow
temporal --help); the SSOT stays where ssot settings say.`,
		Example: `  ampflow dev
  ampflow dev --data-dir /tmp/amp --ui-port 0 --http-addr 127.0.0.1:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDev(cmd, a) },
	}
	f := cmd.Flags()
	f.String("data-dir", "", "keep Temporal's database, the SSOT and the worktrees in `DIR` (default $XDG_STATE_HOME/ampflow/dev, else ~/.local/state/ampflow/dev)")
	f.String("http-addr", "", "serve the HTTP API on `ADDR` (default 127.0.0.1:7480)")
	f.Int("temporal-port", 0, "Temporal frontend `PORT` on 127.0.0.1 (default 7233; 0 in config picks a free port)")
	f.Int("ui-port", 0, "Temporal Web UI `PORT` (default 8233; 0 turns it off)")
	f.Bool("ui-writes", false, "let the Web UI signal, cancel, terminate, reset and start workflows (default read-only)")
	f.String("temporal-db", "", "keep Temporal's state on PostgreSQL: `URL` postgres://USER:PASSWORD@HOST:PORT/DB (default SQLite in DIR)")
	cmd.PreRun = bind(a, map[string]string{"data-dir": "data_dir", "http-addr": "http.addr", "temporal-port": "dev.temporal_port",
		"ui-port": "dev.ui_port", "ui-writes": "dev.ui_writes", "temporal-db": "dev.temporal_db"})
	return cmd
}

// runDev is ampflow dev.
func runDev(cmd *cobra.Command, a *cli.App) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	log := a.Logger(cfg)
	began := time.Now()
	// First, so a person whose first run puts state somewhere unexpected
	// sees where before anything is written.
	fmt.Fprintf(a.Stdout, "%-10s %s (--data-dir or data_dir elsewhere)\n", "state", cfg.DataDir)
	srv, stop, err := startEmbedded(cmd, cfg, log)
	if err != nil {
		return err
	}
	defer stop()
	cfg.Temporal.Address = srv.FrontendAddr()
	fmt.Fprintf(a.Stdout, "%-10s %s (%s; %s)\n", "temporal", srv.FrontendAddr(), stateNote(cfg), keyNote(cfg))
	cfg.Temporal.APIKey = srv.APIKey()
	local := workers.OSUser()
	switch {
	case workers.HasAdmins(cfg):
	case local != "":
		cfg.Admins = config.AdminsNamed(local)
		fmt.Fprintf(a.Stdout, "%-10s %s (the operating-system user; no admins configured)\n", "admin", local)
	default:
		fmt.Fprintf(a.Stdout, "%-10s none: nobody may decide; set admins\n", "admin")
	}
	printUI(a, cfg, srv)
	modes, err := workers.AgentModes(cmd.Context(), cfg.Agents)
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	planner, err := workers.PlannerMode(cmd.Context(), cfg.Goals)
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	modes = append(modes, planner...)
	for _, m := range append(modes, workers.StartNotes(cfg, os.LookupEnv)...) {
		fmt.Fprintf(a.Stdout, "%-10s %s\n", m[0], m[1])
	}
	metrics := httpapi.NewMetrics()
	c, err := workers.Dial(cmd.Context(), cfg.Temporal, log, metrics.TemporalHandler(), 10*time.Second)
	if err != nil {
		return cli.Exit(cli.ExitFailed, err)
	}
	defer c.Close()
	err = workers.Run(cmd.Context(), workers.Options{Config: cfg, Temporal: c, Logger: log, Metrics: metrics, LocalName: local,
		ContractSecretFile: filepath.Join(cfg.DataDir, workers.ContractSecretFile),
		DecisionKeyFile:    filepath.Join(cfg.DataDir, workers.DecisionKeyFile),
		Endpoint: func(name, addr string) {
			fmt.Fprintf(a.Stdout, "%-10s %s\n", name, addr)
			if name == "worker" {
				fmt.Fprintf(a.Stdout, "ready in %s; Ctrl-C to stop\n", time.Since(began).Round(10*time.Millisecond))
			}
		}})
	if err != nil {
		return cli.Exit(cli.ExitFailed, err)
	}
	return nil
}

// workerCommand runs the worker against a Temporal cluster.
func workerCommand(a *cli.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the ampflow worker, HTTP API and chat integrations against a Temporal cluster",
		Long: `Run the ampflow worker against temporal.address / temporal.namespace
(TLS and API key from config), with the HTTP API and the chat integrations.
The namespace must have ampflow's search attributes: AmpStatus and AmpRisk
and AmpRepo (Keyword), AmpRejectCount (Int).

The worker refuses to start without a decision key (auth.decision_key,
AMPFLOW_AUTH_DECISION_KEY, or auth.decision_key_file), which signs and
checks every answer to a decision, and with no admin configured (admins,
slack.admins, telegram.admins or an auth token of role admin): nobody could
decide on a task. admins: ["*"] lets anyone named decide.`,
		Example: `  AMPFLOW_TEMPORAL_ADDRESS=temporal:7233 ampflow worker`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if err := workers.CheckAdmins(cfg); err != nil {
				return cli.Exit(cli.ExitFailed, err)
			}
			// Without the key no answer could be signed nor taken.
			if _, err := cfg.DecisionKey(); err != nil {
				return cli.Exit(cli.ExitFailed, err)
			}
			log := a.Logger(cfg)
			metrics := httpapi.NewMetrics()
			c, err := workers.Dial(cmd.Context(), cfg.Temporal, log, metrics.TemporalHandler(), 30*time.Second)
			if err != nil {
				return cli.Exit(cli.ExitFailed, err)
			}
			defer c.Close()
			fmt.Fprintf(a.Stdout, "%-10s %s (namespace %s)\n", "temporal", cfg.Temporal.Address, cfg.Temporal.Namespace)
			modes, err := workers.AgentModes(cmd.Context(), cfg.Agents)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			planner, err := workers.PlannerMode(cmd.Context(), cfg.Goals)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			modes = append(modes, planner...)
			for _, m := range append(modes, workers.StartNotes(cfg, os.LookupEnv)...) {
				fmt.Fprintf(a.Stdout, "%-10s %s\n", m[0], m[1])
			}
			err = workers.Run(cmd.Context(), workers.Options{Config: cfg, Temporal: c, Logger: log, Metrics: metrics,
				Endpoint: func(name, addr string) { fmt.Fprintf(a.Stdout, "%-10s %s\n", name, addr) }})
			if err != nil {
				return cli.Exit(cli.ExitFailed, err)
			}
			return nil
		},
	}
	cmd.Flags().String("http-addr", "", "serve the HTTP API on `ADDR` (default 127.0.0.1:7480)")
	cmd.PreRun = bind(a, map[string]string{"http-addr": "http.addr"})
	return cmd
}

// bind makes flags the top layer of the configuration keys they name. It
// binds when the command runs: viper keeps one flag per key, and two
// commands share keys.
func bind(a *cli.App, keys map[string]string) func(*cobra.Command, []string) {
	return func(cmd *cobra.Command, _ []string) {
		for flag, key := range keys {
			// The flags exist; binding cannot fail.
			_ = a.Viper.BindPFlag(key, cmd.Flags().Lookup(flag))
		}
	}
}
