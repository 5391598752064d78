package config

import (
	"os"
	"regexp"
	"time"
)

// Pull request modes (delivery.pull_request) and merge methods
// (delivery.merge); Off turns either off.
const (
	Off         = "off"
	PullDraft   = "draft"
	PullReady   = "ready"
	MergeSquash = "squash"
	MergeMerge  = "merge"
	MergeRebase = "rebase"
)

// Delivery takes a task's work to its GitHub repository: the branch
// pushed after each accepted result, a pull request kept up to date,
// GitHub reviews taken as review rounds, the merge after the final
// approval. The repository is the task's GitHub repository (ci.github.repo
// or origin, fixed when the task starts); the API is ci.github.api_url.
type Delivery struct {
	Push        bool           `mapstructure:"push"`
	PullRequest string         `mapstructure:"pull_request"` // off, draft or ready
	Merge       string         `mapstructure:"merge"`        // off, squash, merge or rebase
	GitHub      DeliveryGitHub `mapstructure:"github"`
}

// DeliveryGitHub holds delivery's GitHub settings.
type DeliveryGitHub struct {
	// TokenEnv names the environment variable that holds the token for
	// pushing and for the API; the token is never in this file.
	TokenEnv string `mapstructure:"token_env"`
	// Reviewers are the GitHub logins whose reviews count; none means
	// anyone with write access to the repository.
	Reviewers []string `mapstructure:"reviewers"`
	// Approvals is how many approving GitHub reviews the task waits for
	// after the reviewer agent's approval; 0 waits for none.
	Approvals int `mapstructure:"approvals"`
	// CountRejections makes "changes requested" count toward the
	// hallucination lock like the reviewer agent's rejections.
	CountRejections bool `mapstructure:"count_rejections"`
	// Poll is how often the pull request's reviews are read (with ETags).
	Poll time.Duration `mapstructure:"poll"`
	// WebhookSecret, when set, turns on POST /v1/github/webhook, signed
	// with it (X-Hub-Signature-256). Secret.
	WebhookSecret string `mapstructure:"webhook_secret"`
}

// On reports whether any delivery to GitHub is configured.
func (d Delivery) On() bool {
	return d.Push || (d.PullRequest != "" && d.PullRequest != Off) || (d.Merge != "" && d.Merge != Off)
}

// Token is the delivery token, read from the environment variable
// TokenEnv names; empty when none is named or set.
func (d DeliveryGitHub) Token() string {
	if d.TokenEnv == "" {
		return ""
	}
	return os.Getenv(d.TokenEnv)
}

var deliveryDefaults = map[string]any{
	"delivery.push":                    false,
	"delivery.pull_request":            Off,
	"delivery.merge":                   Off,
	"delivery.github.token_env":        "",
	"delivery.github.reviewers":        []string{},
	"delivery.github.approvals":        0,
	"delivery.github.count_rejections": false,
	"delivery.github.poll":             time.Minute,
	"delivery.github.webhook_secret":   "",
}

func init() {
	for k, v := range deliveryDefaults {
		defaults[k] = v
	}
}

// envNameRE is a portable environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c Config) validateDelivery(ps *problems) {
	d := c.Delivery
	ps.oneOf("delivery.pull_request", d.PullRequest, Off, PullDraft, PullReady)
	ps.oneOf("delivery.merge", d.Merge, Off, MergeSquash, MergeMerge, MergeRebase)
	ps.positive("delivery.github.poll", d.GitHub.Poll)
	if d.GitHub.Approvals < 0 {
		ps.add("delivery.github.approvals", "must be ≥ 0, not %d", d.GitHub.Approvals)
	}
	if t := d.GitHub.TokenEnv; t != "" && !envNameRE.MatchString(t) {
		ps.add("delivery.github.token_env", "must be the name of an environment variable, not %q", t)
	}
	pr := d.PullRequest == PullDraft || d.PullRequest == PullReady
	merge := d.Merge == MergeSquash || d.Merge == MergeMerge || d.Merge == MergeRebase
	if pr && !d.Push {
		ps.add("delivery.pull_request", "needs delivery.push: a pull request is of the pushed branch")
	}
	if merge && !pr {
		ps.add("delivery.merge", "needs delivery.pull_request: the merge is of the task's pull request")
	}
	if pr {
		ps.required("delivery.github.token_env", d.GitHub.TokenEnv, "delivery.pull_request is on")
	}
}
