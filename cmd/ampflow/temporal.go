package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/cmd/ampflow/cli"
)

// temporalCommand runs the embedded Temporal server alone, for workers
// started with `ampflow worker` elsewhere.
func temporalCommand(a *cli.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "temporal",
		Short: "Run only the embedded Temporal server (SQLite, or PostgreSQL with --temporal-db), for ampflow workers",
		Long: `Run the Temporal server that ampflow dev embeds, without a worker, so that
any number of ` + "`ampflow worker`" + ` processes can share it: a cluster
without Docker. The namespace (temporal.namespace) is created if missing,
with the search attributes ampflow needs.

State is kept in DATA_DIR/temporal.db (SQLite) unless --temporal-db names a
PostgreSQL database: postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=disable
keeps the state in DB and visibility in DB_visibility, the layout of
docker-compose.yml. Missing databases are created (connecting to the
"postgres" database to do so) and their schemas set up, or brought up to
date, from the schema files of the embedded Temporal server version. Run
one server per database. Stop with Ctrl-C.

The frontend requires an API key of every client (temporal.api_key, else
the key kept in DATA_DIR/temporal.key, made when missing): give workers
the same AMPFLOW_TEMPORAL_API_KEY. It speaks plain text, so workers on
other hosts also set AMPFLOW_TEMPORAL_PLAINTEXT=true and the key crosses
the network readable: --temporal-ip beyond the loopback only on a trusted
network. The Web UI answers only to a loopback Host and is read-only
unless --ui-writes.`,
		Example: `  ampflow temporal --temporal-db 'postgres://temporal:temporal@127.0.0.1:5432/temporal?sslmode=disable'
  ampflow temporal --data-dir /var/lib/ampflow --temporal-ip 0.0.0.0 --ui-port 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			began := time.Now()
			srv, stop, err := startEmbedded(cmd, cfg, a.Logger(cfg))
			if err != nil {
				return err
			}
			defer stop()
			fmt.Fprintf(a.Stdout, "%-10s %s (namespace %s, %s; %s)\n", "temporal", srv.FrontendAddr(), cfg.Temporal.Namespace, stateNote(cfg), keyNote(cfg))
			printUI(a, cfg, srv)
			fmt.Fprintf(a.Stdout, "ready in %s; Ctrl-C to stop\n", time.Since(began).Round(10*time.Millisecond))
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.String("data-dir", "", "keep Temporal's SQLite database in `DIR` (default $XDG_STATE_HOME/ampflow/dev, else ~/.local/state/ampflow/dev)")
	f.String("temporal-db", "", "keep Temporal's state on PostgreSQL: `URL` postgres://USER:PASSWORD@HOST:PORT/DB")
	f.String("temporal-ip", "", "bind the frontend and web UI on `IP` (default 127.0.0.1)")
	f.Int("temporal-port", 0, "frontend `PORT` (default 7233; 0 in config picks a free port)")
	f.Int("ui-port", 0, "Temporal Web UI `PORT` (default 8233; 0 turns it off)")
	f.Bool("ui-writes", false, "let the Web UI signal, cancel, terminate, reset and start workflows (default read-only)")
	cmd.PreRun = bind(a, map[string]string{"data-dir": "data_dir", "temporal-db": "dev.temporal_db",
		"temporal-ip": "dev.temporal_ip", "temporal-port": "dev.temporal_port", "ui-port": "dev.ui_port", "ui-writes": "dev.ui_writes"})
	return cmd
}
