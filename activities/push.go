package activities

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/gitsafe"
	"github.com/ampflow/ampflow/amp"
)

// ErrPush is the type of a push the remote refused for a reason a retry
// cannot change: the branch moved on there (someone else pushed), or
// the remote does not accept the credentials.
const ErrPush = "Push"

// ErrDeliveryConfig is the type of a delivery that cannot work as
// configured: no token, an unknown repository, no remote.
const ErrDeliveryConfig = "DeliveryConfig"

// Environment variables the credential helper reads; the push's git
// process is given them and nothing else of the token.
const (
	tokenVar = "AMPFLOW_GIT_TOKEN"
	hostVar  = "AMPFLOW_GIT_HOST"
)

// credentialHelper answers git's "get" with the token from the
// environment, only for the host the push was meant for: a remote the
// repository's configuration rewrites (url.*.insteadOf) to another host
// gets nothing. The token is in neither argv nor a file.
const credentialHelper = `!f() { test "$1" = get || exit 0; h=; while IFS= read -r l; do case "$l" in host=*) h="${l#host=}";; esac; done; ` +
	`test -n "$h" && test "$h" = "$` + hostVar + `" || exit 0; echo username=x-access-token; echo "password=$` + tokenVar + `"; }; f`

// Pusher pushes a task's branch to the remote fixed when the task
// started, with the delivery token through a credential helper.
type Pusher struct {
	Git *Git
	// Token is the delivery token; it reaches only the push's git
	// process, in its environment.
	Token   string
	Secrets *child.Scrubber
}

// PushTargetInput asks where a task's branch is pushed.
type PushTargetInput struct {
	TaskID string `json:"task_id"`
	Repo   string `json:"repo"`
}

// PushTargetResult is the remote's URL, origin's as it is now.
type PushTargetResult struct {
	URL string `json:"url"`
}

// Target reads the URL of the repository's origin, which the task keeps
// as its push remote: an executor editing .git/config later changes
// nothing.
func (p *Pusher) Target(ctx context.Context, in PushTargetInput) (PushTargetResult, error) {
	if amp.RepoIsURL(in.Repo) {
		return PushTargetResult{URL: in.Repo}, nil // the mirror's branches go back where they came from
	}
	if _, err := p.Git.openRepo(ctx, in.Repo, ""); err != nil {
		return PushTargetResult{}, err
	}
	out, err := p.Git.run(ctx, in.Repo, "config", "--get", "remote.origin.url")
	u := strings.TrimSpace(string(out))
	if err != nil || u == "" {
		return PushTargetResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("delivery.push: %s has no origin remote to push task %s to", in.Repo, in.TaskID), ErrDeliveryConfig, nil)
	}
	return PushTargetResult{URL: u}, nil
}

// PushInput pushes Commit to Branch of Remote.
type PushInput struct {
	TaskID string `json:"task_id"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	// Remote is the URL the task fixed when it started (PushTarget).
	Remote string `json:"remote"`
	Commit string `json:"commit"`
	// Lease is the commit the task pushed last: the remote branch may be
	// replaced (after a rebase) only while it is still there. Empty for
	// the first push, which never replaces anything.
	Lease string `json:"lease,omitempty"`
}

// PushResult says what the push did.
type PushResult struct {
	Commit string `json:"commit"`
	// Already is set when the remote had the commit: a retried push.
	Already bool `json:"already,omitempty"`
}

// Push pushes in.Commit to in.Branch. A retry after a push that went
// through finds the branch at the commit and does nothing.
func (p *Pusher) Push(ctx context.Context, in PushInput) (PushResult, error) {
	var err error
	if in.Repo, err = p.Git.LocalAt(ctx, in.Repo, "", in.Commit); err != nil {
		return PushResult{}, err
	}
	commit, err := p.Git.openRepo(ctx, in.Repo, in.Commit)
	if err != nil {
		return PushResult{}, err
	}
	if commit == "" {
		return PushResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("pushing task %s: commit %s not in %s", in.TaskID, in.Commit, in.Repo), ErrCommitMissing, nil)
	}
	ref := "refs/heads/" + normalizeBranch(in.Branch)
	mirror, err := p.mirror(ctx, in.Repo)
	if err != nil {
		return PushResult{}, fmt.Errorf("pushing task %s: %w", in.TaskID, err)
	}
	defer os.RemoveAll(mirror)
	out, err := p.git(ctx, mirror, in.Remote, "ls-remote", "--", in.Remote, ref)
	if err != nil {
		return PushResult{}, p.pushError(in, err)
	}
	if remoteHead, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\t"); remoteHead == commit {
		return PushResult{Commit: commit, Already: true}, nil
	}
	args := []string{"push", "--porcelain"}
	if in.Lease != "" {
		args = append(args, "--force-with-lease="+ref+":"+in.Lease)
	}
	args = append(args, "--", in.Remote, commit+":"+ref)
	if _, err := p.git(ctx, mirror, in.Remote, args...); err != nil {
		return PushResult{}, p.pushError(in, err)
	}
	return PushResult{Commit: commit}, nil
}

// mirror makes the clean repository a push goes from: a bare repository
// of its own, with git's default configuration, reading the task's
// repository's objects. Nothing of that repository's configuration
// (url.*.insteadOf, pushurl, hooks, filters) reaches the push; the caller
// removes it.
func (p *Pusher) mirror(ctx context.Context, repo string) (string, error) {
	out, err := p.Git.run(ctx, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("finding the objects of %s: %w", repo, err)
	}
	objects := filepath.Join(strings.TrimSpace(string(out)), "objects")
	dir, err := os.MkdirTemp("", "ampflow-push-")
	if err != nil {
		return "", err
	}
	if _, err := p.Git.run(ctx, dir, "init", "-q", "--bare", dir); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("making the push's clean repository: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "objects", "info", "alternates"), []byte(objects+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// git runs git for the remote in the push's clean repository (mirror):
// no hooks or configuration of the task's repository (an executor could
// have written one to read the token), no credential helper but ours,
// the token in the environment only.
func (p *Pusher) git(ctx context.Context, mirror, remote string, args ...string) ([]byte, error) {
	full := gitsafe.Args(nil, append([]string{"--git-dir=" + mirror, "-c", "credential.helper=" + credentialHelper}, args...)...)
	cmd := exec.CommandContext(ctx, p.Git.bin(), full...)
	cmd.Dir = mirror
	env := gitEnv(false, "GIT_CEILING_DIRECTORIES="+filepath.Dir(mirror))
	if s, ok := os.LookupEnv("SSH_AUTH_SOCK"); ok {
		env = append(env, "SSH_AUTH_SOCK="+s)
	}
	if p.Token != "" {
		if u, err := url.Parse(remote); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
			env = append(env, tokenVar+"="+p.Token, hostVar+"="+u.Host)
		}
	}
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &gitError{args: args[:1], stderr: p.Secrets.Scrub(stderr.String() + stdout.String()), err: err}
	}
	return []byte(stdout.String()), nil
}

// pushError makes a refusal final and leaves a network failure to retry.
func (p *Pusher) pushError(in PushInput, err error) error {
	return p.remoteError(fmt.Sprintf("pushing %s of task %s to %s", in.Branch, in.TaskID, redactURL(in.Remote)), err)
}

// remoteError is pushError for any operation op on the remote.
func (p *Pusher) remoteError(op string, err error) error {
	msg := p.Secrets.Scrub(fmt.Sprintf("%s: %v", op, err))
	var ge *gitError
	if errors.As(err, &ge) {
		s := ge.stderr
		for _, final := range []string{"[rejected]", "stale info", "non-fast-forward", "Authentication failed", "could not read Username",
			"Permission denied", "denied", "protected branch", "[remote rejected]", "does not appear to be a git repository", "not found"} {
			if strings.Contains(s, final) {
				return temporal.NewNonRetryableApplicationError(msg, ErrPush, nil)
			}
		}
	}
	return errors.New(msg)
}

// redactURL drops a password a remote URL may carry.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User(u.User.Username())
	return u.String()
}
