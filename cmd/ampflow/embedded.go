package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/cmd/ampflow/cli"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workers"
	"github.com/ampflow/ampflow/workers/devserver"
)

// startEmbedded starts the embedded Temporal server of ampflow dev and
// ampflow temporal as cfg's dev keys say, requiring the key
// workers.TemporalAPIKey gives, with Go's collector tuned for it; stop
// stops it, logging a failure. A failure to start is an ExitFailed.
func startEmbedded(cmd *cobra.Command, cfg config.Config, log *slog.Logger) (srv *devserver.Server, stop func(), err error) {
	tuneGC()
	// The server's own system workers make the process's workflow cache.
	workers.SetWorkflowCache(cfg.Temporal.WorkflowCache)
	key, err := workers.TemporalAPIKey(cfg)
	if err != nil {
		return nil, nil, cli.Exit(cli.ExitFailed, err)
	}
	o := devserver.Options{
		IP:               cfg.Dev.TemporalIP,
		Port:             cfg.Dev.TemporalPort,
		APIKey:           key,
		UIPort:           cfg.Dev.UIPort,
		UIWrites:         cfg.Dev.UIWrites,
		Namespace:        cfg.Temporal.Namespace,
		SearchAttributes: workers.SearchAttributes(),
		Logger:           log,
	}
	if cfg.Dev.TemporalDB != "" {
		o.Postgres = cfg.Dev.TemporalDB
	} else {
		o.DataDir = cfg.DataDir
	}
	srv, err = devserver.Start(cmd.Context(), o)
	if err != nil {
		return nil, nil, cli.Exit(cli.ExitFailed, err)
	}
	return srv, func() {
		if err := srv.Stop(); err != nil {
			log.Warn("stopping the embedded Temporal server", "error", err)
		}
	}, nil
}

// printUI prints the address of the server's Web UI, when it serves one.
func printUI(a *cli.App, cfg config.Config, srv *devserver.Server) {
	if ui := srv.UIAddr(); ui != "" {
		mode := "read-only; --ui-writes to change workflows"
		if cfg.Dev.UIWrites {
			mode = "writes on"
		}
		fmt.Fprintf(a.Stdout, "%-10s http://%s (%s)\n", "web ui", ui, mode)
	}
}

// keyNote says where the embedded server's API key comes from, without
// the key.
func keyNote(cfg config.Config) string {
	if cfg.Temporal.APIKey != "" {
		return "API key from temporal.api_key"
	}
	return "API key in " + filepath.Join(cfg.DataDir, workers.TemporalKeyFile)
}

// stateNote says where the embedded server keeps its state, without a
// password.
func stateNote(cfg config.Config) string {
	if cfg.Dev.TemporalDB != "" {
		return "state in " + cfg.Redacted().Dev.TemporalDB
	}
	return "data in " + cfg.DataDir
}
