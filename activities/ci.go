package activities

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/config"
)

// CIOptions configure NewCIProvider, from the configuration file's ci
// section.
type CIOptions struct {
	// GitHub provider.
	GitHubToken   string
	GitHubBaseURL string   // empty for api.github.com; else a GitHub Enterprise URL
	GitHubHosts   []string // extra origin hosts taken for GitHub (Enterprise)
	// GitHubRepo is ci.github.repo, OWNER/NAME; empty means each task's
	// origin when it started. The github provider sets it on Git too, so
	// that CheckBranch records it for each task.
	GitHubRepo string
	// NoChecks is the state of a commit with no check at all; empty means
	// pending (checks often appear seconds after a push).
	NoChecks   CIState
	HTTPClient *http.Client

	// Command provider.
	Command        []string      // argv, e.g. ["go", "test", "./..."]
	CommandTimeout time.Duration // zero means config.DefaultCICommandTimeout
	CommandEnv     []string      // variables let through (NAME) or set (NAME=value)
	// Secrets are masked in CI output.
	Secrets *child.Scrubber

	// Store keeps the command provider's logs and cached results.
	Store *TaskRecord
	// Git runs git; nil means the git binary on PATH.
	Git *Git
}

// NewCIProvider returns the provider of the given kind: "none" (or empty),
// "github" or "command".
func NewCIProvider(kind string, opts CIOptions) (CIProvider, error) {
	g := opts.Git
	if g == nil {
		g = &Git{GitHubHosts: opts.GitHubHosts}
	}
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "", config.ProviderNone:
		return NoCI{}, nil
	case config.ProviderGitHub:
		c, err := github.New(github.Options{Token: opts.GitHubToken, BaseURL: opts.GitHubBaseURL, HTTPClient: opts.HTTPClient})
		if err != nil {
			return nil, fmt.Errorf("configuring the github CI provider: %w", err)
		}
		ci := &GitHubCI{Client: c, Git: g, NoChecks: opts.NoChecks, Secrets: opts.Secrets}
		if opts.GitHubRepo != "" {
			if ci.Repo, err = github.ConfiguredRepo(opts.GitHubRepo, opts.GitHubBaseURL); err != nil {
				return nil, fmt.Errorf("configuring the github CI provider: ci.github.repo: %w", err)
			}
			g.GitHubRepo = ci.Repo
		}
		return ci, nil
	case config.ProviderCommand:
		if len(opts.Command) == 0 || opts.Command[0] == "" {
			return nil, fmt.Errorf("configuring the command CI provider: no command given")
		}
		if opts.Store == nil {
			return nil, fmt.Errorf("configuring the command CI provider: no SSOT store for its logs")
		}
		return &CommandCI{Argv: opts.Command, Timeout: opts.CommandTimeout, Env: opts.CommandEnv, Secrets: opts.Secrets, Store: opts.Store, Git: g}, nil
	}
	return nil, fmt.Errorf("configuring CI: unknown provider %q (want none, github or command)", kind)
}

// NoCI is the provider of a project without CI: every commit is CINone.
type NoCI struct{}

// Status implements CIProvider.
func (NoCI) Status(context.Context, CIStatusInput) (CIStatusResult, error) {
	return CIStatusResult{State: CINone}, nil
}

// commitOf is in.Commit resolved to a full hash, or the branch head when
// it is empty.
func commitOf(ctx context.Context, g *Git, in CIStatusInput) (string, error) {
	if in.Commit != "" && commitHashRE.MatchString(in.Commit) {
		full, err := g.openRepo(ctx, in.Repo, in.Commit)
		if err != nil {
			return "", err
		}
		if full == "" {
			return "", commitMissing(in)
		}
		return full, nil
	}
	if _, err := g.openRepo(ctx, in.Repo, ""); err != nil {
		return "", err
	}
	if in.Commit != "" {
		return "", commitMissing(in)
	}
	branch := normalizeBranch(in.Branch)
	refs, err := g.readRefs(ctx, in.Repo, branch)
	if err != nil {
		return "", err
	}
	return refs.head(in.Repo, branch)
}

func commitMissing(in CIStatusInput) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("commit %q not found in %s (branch %s)", in.Commit, in.Repo, in.Branch), ErrCommitMissing, nil)
}
