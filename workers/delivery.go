package workers

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/githubhook"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/intake"
)

// deliveryParts builds the pusher and the pull requests' keeper of
// delivery.*; the keeper is nil when it is off, and the pusher has no
// token, for the tasks on a repository given by URL, whose branches go
// back there whatever delivery says. The token is read from the variable
// delivery.github.token_env names, once, and kept in memory only.
func deliveryParts(cfg config.Config, git *activities.Git, secrets *child.Scrubber) (*activities.Pusher, *activities.PullRequests, error) {
	d := cfg.Delivery
	if !d.On() {
		return &activities.Pusher{Git: git, Secrets: secrets}, nil, nil
	}
	token := d.GitHub.Token()
	if d.GitHub.TokenEnv != "" && token == "" {
		return nil, nil, fmt.Errorf("delivery.github.token_env names %s, which is not set", d.GitHub.TokenEnv)
	}
	base := githubBase(cfg.CI.GitHub.APIURL)
	if u, err := url.Parse(base); err == nil && u.Hostname() != "" && !slicesContainsFold(git.GitHubHosts, u.Hostname()) {
		// An Enterprise server's remotes name its host.
		git.GitHubHosts = append(git.GitHubHosts, u.Hostname())
	}
	if git.GitHubRepo.Name == "" && cfg.CI.GitHub.Repo != "" {
		repo, err := github.ConfiguredRepo(cfg.CI.GitHub.Repo, base)
		if err != nil {
			return nil, nil, fmt.Errorf("ci.github.repo: %w", err)
		}
		git.GitHubRepo = repo
	}
	pusher := &activities.Pusher{Git: git, Token: token, Secrets: secrets}
	if d.PullRequest != config.PullDraft && d.PullRequest != config.PullReady {
		return pusher, nil, nil
	}
	c, err := github.New(github.Options{Token: token, BaseURL: base})
	if err != nil {
		return nil, nil, fmt.Errorf("delivery: %w", err)
	}
	pulls := &activities.PullRequests{API: c, Reviewers: d.GitHub.Reviewers}
	if cfg.Dashboard.Enabled {
		pulls.DashboardURL = cfg.API.URL
	}
	return pusher, pulls, nil
}

func slicesContainsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// mountGitHubWebhook serves the signed GitHub webhook when
// delivery.github.webhook_secret is set (reviews wake their tasks) or the
// issues intake has a webhook secret (issues become tasks).
func mountGitHubWebhook(o Options, parts *Parts, in *intake.GitHub, api *httpapi.Server, log *slog.Logger) {
	if parts.Tasks == nil {
		return
	}
	h := &githubhook.Handler{Logger: log}
	if secret := o.Config.Delivery.GitHub.WebhookSecret; secret != "" {
		h.Secret, h.Tasks = []byte(secret), parts.Tasks
	}
	if secret := o.Config.Intake.GitHub.WebhookSecret(); in != nil && secret != "" {
		h.IssueSecret, h.Issues = []byte(secret), in
	}
	if h.Tasks == nil && h.Issues == nil {
		return
	}
	api.Mount("POST "+githubhook.Path, h)
}
