package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v74/github"
)

// ErrNoToken is returned when the client has no API token.
var ErrNoToken = errors.New("no GitHub token configured")

// ErrNotFound is returned when GitHub does not know the repository or the
// commit (or the token may not see it: GitHub answers 404 for both).
var ErrNotFound = errors.New("repository or commit not found on GitHub")

// ErrUnauthorized is returned when GitHub refuses the token (401).
var ErrUnauthorized = errors.New("GitHub refused the token")

// RateLimitedError is a primary or secondary rate limit; retry at RetryAt.
type RateLimitedError struct {
	RetryAt time.Time
	Err     error
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("GitHub rate limit until %s: %v", e.RetryAt.UTC().Format(time.RFC3339), e.Err)
}

func (e *RateLimitedError) Unwrap() error { return e.Err }

// Options configure a Client.
type Options struct {
	Token string
	// BaseURL is the REST API root: empty for api.github.com, else a GitHub
	// Enterprise server such as https://ghe.example.com (the /api/v3/
	// suffix is added when missing).
	BaseURL string
	// HTTPClient is the transport; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock used to turn Retry-After into a time; nil is time.Now.
	Now func() time.Time
}

// Client reads check runs and statuses, and opens, reads and merges
// pull requests.
type Client struct {
	gh    *gh.Client
	token string
	now   func() time.Time
	// plain fetches pre-signed URLs (job logs): never with the token.
	plain *http.Client
}

// New builds a client. A missing token is not an error here: the first
// call reports ErrNoToken, so a worker can start without GitHub.
func New(opts Options) (*Client, error) {
	c := gh.NewClient(opts.HTTPClient)
	if opts.Token != "" {
		c = c.WithAuthToken(opts.Token)
	}
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("parsing GitHub API URL %q: not an absolute URL", opts.BaseURL)
		}
		if u.Host != "api.github.com" {
			if c, err = c.WithEnterpriseURLs(opts.BaseURL, opts.BaseURL); err != nil {
				return nil, fmt.Errorf("parsing GitHub API URL %q: %w", opts.BaseURL, err)
			}
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	plain := opts.HTTPClient
	if plain == nil {
		plain = http.DefaultClient
	}
	return &Client{gh: c, token: opts.Token, now: now, plain: plain}, nil
}

// Outcome is a check normalised to what ampflow decides on.
type Outcome string

// Check outcomes.
const (
	OutcomePending Outcome = "pending"
	OutcomePassed  Outcome = "passed"
	OutcomeFailed  Outcome = "failed"
)

// Check is one check run or one commit status of a commit.
type Check struct {
	Name    string
	Source  string // "check_run" or "status"
	State   string // GitHub's raw status/conclusion or status state
	Outcome Outcome
}

// CommitChecks returns every check run (latest per name) and every commit
// status (latest per context) of ref, following pagination.
func (c *Client) CommitChecks(ctx context.Context, owner, repo, ref string) ([]Check, error) {
	if c.token == "" {
		return nil, ErrNoToken
	}
	var checks []Check
	opts := &gh.ListCheckRunsOptions{Filter: gh.Ptr("latest"), ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, owner, repo, ref, opts)
		if err != nil {
			return nil, c.classify(fmt.Sprintf("listing check runs of %s/%s@%s", owner, repo, ref), err)
		}
		for _, run := range res.CheckRuns {
			checks = append(checks, checkRun(run))
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	sopts := &gh.ListOptions{PerPage: 100}
	for {
		st, resp, err := c.gh.Repositories.GetCombinedStatus(ctx, owner, repo, ref, sopts)
		if err != nil {
			return nil, c.classify(fmt.Sprintf("reading the combined status of %s/%s@%s", owner, repo, ref), err)
		}
		for _, s := range st.Statuses {
			state := s.GetState()
			checks = append(checks, Check{Name: s.GetContext(), Source: "status", State: state, Outcome: statusOutcome(state)})
		}
		if resp.NextPage == 0 {
			break
		}
		sopts.Page = resp.NextPage
	}
	return checks, nil
}

func checkRun(run *gh.CheckRun) Check {
	ck := Check{Name: run.GetName(), Source: "check_run", State: run.GetStatus()}
	if run.GetStatus() != "completed" {
		ck.Outcome = OutcomePending
		return ck
	}
	ck.State = run.GetConclusion()
	switch ck.State {
	case "success", "neutral", "skipped":
		ck.Outcome = OutcomePassed
	default:
		// failure, cancelled, timed_out, action_required, startup_failure,
		// stale and anything GitHub adds later: not a pass.
		ck.Outcome = OutcomeFailed
	}
	return ck
}

func statusOutcome(state string) Outcome {
	switch state {
	case "success":
		return OutcomePassed
	case "pending":
		return OutcomePending
	default: // failure, error
		return OutcomeFailed
	}
}

// classify turns go-github's errors into this package's.
func (c *Client) classify(op string, err error) error {
	var rl *gh.RateLimitError
	if errors.As(err, &rl) {
		at := rl.Rate.Reset.Time
		if at.IsZero() {
			at = c.now().Add(time.Minute)
		}
		return fmt.Errorf("%s: %w", op, &RateLimitedError{RetryAt: at, Err: err})
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) {
		at := c.now().Add(time.Minute)
		if abuse.RetryAfter != nil {
			at = c.now().Add(*abuse.RetryAfter)
		}
		return fmt.Errorf("%s: %w", op, &RateLimitedError{RetryAt: at, Err: err})
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch code := er.Response.StatusCode; {
		case code == http.StatusNotFound:
			return fmt.Errorf("%s: %w", op, ErrNotFound)
		case code == http.StatusUnauthorized:
			return fmt.Errorf("%s: %w: %v", op, ErrUnauthorized, err)
		case code == http.StatusTooManyRequests || code == http.StatusForbidden:
			if at, ok := c.retryAt(er.Response.Header); ok {
				return fmt.Errorf("%s: %w", op, &RateLimitedError{RetryAt: at, Err: err})
			}
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// retryAt reads Retry-After (seconds) or X-RateLimit-Reset (epoch seconds).
func (c *Client) retryAt(h http.Header) (time.Time, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.Atoi(v); err == nil {
			return c.now().Add(time.Duration(s) * time.Second), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return t, true
		}
	}
	if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Unix(s, 0), true
		}
	}
	return time.Time{}, false
}
