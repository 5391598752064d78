package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/intake"
	"github.com/ampflow/ampflow/workflows"
)

// LeaseIntake is the lease under which one worker at a time polls the
// GitHub issues and comments on them.
const LeaseIntake = "intake.github"

// intakeCoordinator is the coordinator of the tasks issues start.
const intakeCoordinator = "intake:github"

// gitHubIntake builds the GitHub issues intake of intake.github.*; nil
// when no repository is listed. Its token is read once, from the variable
// intake.github.token_env names, and kept in memory only.
func gitHubIntake(o Options, parts *Parts, log *slog.Logger) (*intake.GitHub, error) {
	cfg := o.Config.Intake.GitHub
	if !cfg.On() || parts.Tasks == nil || parts.Store == nil {
		return nil, nil
	}
	token := cfg.Token()
	if token == "" {
		return nil, fmt.Errorf("intake.github.token_env names %s, which is not set", cfg.TokenEnv)
	}
	if cfg.WebhookSecretEnv != "" && cfg.WebhookSecret() == "" {
		return nil, fmt.Errorf("intake.github.webhook_secret_env names %s, which is not set", cfg.WebhookSecretEnv)
	}
	c, err := github.New(github.Options{Token: token, BaseURL: githubBase(cfg.APIURL)})
	if err != nil {
		return nil, fmt.Errorf("intake.github.api_url: %w", err)
	}
	g := &intake.GitHub{Config: cfg, API: c, Store: parts.Store, Logger: log,
		Start: func(ctx context.Context, in task.Input) (string, bool, error) {
			in.Coordinator = intakeCoordinator
			return workflows.StartOnce(ctx, parts.Tasks, parts.Store, in, time.Now().Year())
		}}
	if o.Config.Dashboard.Enabled {
		g.DashboardURL = o.Config.API.URL
	}
	return g, nil
}
