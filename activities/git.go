package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/activities/gitsafe"
	"github.com/ampflow/ampflow/amp"
)

// DiffWriter keeps a diff where a reviewer can read it and returns its path.
// *Store implements it.
type DiffWriter interface {
	WriteDiff(taskID, msgID string, diff []byte) (string, error)
}

// Git implements GitChecker with the git binary. It never trusts an agent:
// branches, commits and diffs are read from the repository itself.
//
// The default branch of a repository is, in order: the branch origin/HEAD
// points to; init.defaultBranch when that branch exists; main, then master,
// when it exists; else the branch HEAD points to. That last guess fails
// closed in CheckBranch: a local-only repository whose HEAD is on the task
// branch, with nothing else to tell, has it refused as protected, with a
// hint to set origin/HEAD or init.defaultBranch. CheckResult uses the
// default branch CheckBranch found (CheckResultInput.DefaultBranch) and
// otherwise never takes the task branch for the default: an executor
// usually has it checked out.
type Git struct {
	// Diffs receives the diff of a result whose commit cannot be shown by a
	// GitHub compare URL. Nil leaves DiffURL empty in that case.
	Diffs DiffWriter
	// GitHubHosts are extra host names (GitHub Enterprise) whose origin
	// URLs get compare URLs; github.com is always one.
	GitHubHosts []string
	// GitHubRepo is the repository ci.github.repo names; the zero Repo
	// means origin's, read by CheckBranch.
	GitHubRepo github.Repo
	// Bin is the git executable; empty means "git" on PATH.
	Bin string
	// Mirrors is the directory of the mirrors of repositories given by
	// URL (data_dir/repos); empty refuses them.
	Mirrors string
	// MaxDiff caps the git diff output read to check a result; zero is
	// DefaultMaxDiff. A larger diff is reported as too large to check.
	MaxDiff int64
}

// gitError is a failed git command with its stderr.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

func (e *gitError) Unwrap() error { return e.err }

// gitEnv is git's environment. With inherit false it is gitsafe's: git in
// a task's repository must see none of the worker's secrets. The SSOT's
// own repository inherits the worker's environment, for its push
// credentials.
func gitEnv(inherit bool, extra ...string) []string {
	if !inherit {
		return gitsafe.Env(extra...)
	}
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_PAGER=cat", "GIT_OPTIONAL_LOCKS=0")
	return append(env, extra...)
}

// run runs git in a task's repository dir and returns its stdout.
func (g *Git) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return RunGit(ctx, g.bin(), dir, false, args...)
}

func (g *Git) bin() string {
	if g == nil || g.Bin == "" {
		return "git"
	}
	return g.Bin
}

// RunGit runs git in dir as gitsafe has it: nothing the repository names
// runs; inherit passes the worker's environment on (see gitEnv).
func RunGit(ctx context.Context, bin, dir string, inherit bool, args ...string) ([]byte, error) {
	return runGit(ctx, bin, dir, inherit, "", args...)
}

// runGit is RunGit with stdin ("" for none).
func runGit(ctx context.Context, bin, dir string, inherit bool, stdin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, gitsafe.Args(nil, args...)...)
	cmd.Dir = dir
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	// The ceiling stops git from finding a repository above dir, so a plain
	// directory inside some other work tree is not taken for a repository.
	cmd.Env = gitEnv(inherit, "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), ctx.Err())
		}
		// stdout too: what rev-parse printed before failing tells why.
		return stdout.Bytes(), &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return stdout.Bytes(), nil
}

// exitCode1 reports whether err is git exiting with status 1, which for
// rev-parse --verify --quiet, merge-base and diff --quiet means "no", not
// a failure.
func exitCode1(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 1
}

// openRepo checks that repo is the top of a git work tree. Given a rev, it
// resolves it to a full commit hash in the same git process; hash is ""
// when rev names no commit.
func (g *Git) openRepo(ctx context.Context, repo, rev string) (hash string, err error) {
	fi, err := os.Stat(repo)
	if err != nil || !fi.IsDir() {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("repository %s does not exist or is not a directory", repo), ErrNotWorkTree, err)
	}
	args := []string{"rev-parse", "--is-inside-work-tree"}
	if rev != "" {
		args = append(args, "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	}
	out, err := g.run(ctx, repo, args...)
	inside, rest, _ := strings.Cut(string(out), "\n")
	if rev != "" && inside == "true" && err != nil {
		if exitCode1(err) {
			return "", nil
		}
		return "", fmt.Errorf("resolving commit %s in %s: %w", rev, repo, err)
	}
	if err != nil || inside != "true" {
		if ctx.Err() != nil {
			return "", fmt.Errorf("opening repository %s: %w", repo, ctx.Err())
		}
		var ge *gitError
		if err != nil && !errors.As(err, &ge) {
			return "", fmt.Errorf("opening repository %s: %w", repo, err)
		}
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("repository %s is not a git work tree", repo), ErrNotWorkTree, err)
	}
	return strings.TrimSpace(rest), nil
}

// openRefs checks that repo is the top of a git work tree and reads the
// refs of branches (readRefs). A .git in repo and a cat-file that succeeds
// there stand for openRepo's rev-parse, one git process fewer on every
// check; failing either, openRepo runs to tell why.
func (g *Git) openRefs(ctx context.Context, repo string, branches ...string) (refSet, error) {
	if _, err := os.Stat(filepath.Join(repo, ".git")); err == nil {
		refs, err := g.readRefs(ctx, repo, branches...)
		if err == nil {
			return refs, nil
		}
		if _, oerr := g.openRepo(ctx, repo, ""); oerr != nil {
			return refSet{}, oerr
		}
		return refSet{}, err
	}
	if _, err := g.openRepo(ctx, repo, ""); err != nil {
		return refSet{}, err
	}
	return g.readRefs(ctx, repo, branches...)
}

// defaultBranch finds the repository's default branch as documented on
// Git; "" when there is none. HEAD's branch is not taken when it is
// exclude; fromHEAD says the answer is that last guess. The answer's refs
// are read into refs.
//
// cfg, when not nil, is the repository's configuration already read.
func (g *Git) defaultBranch(ctx context.Context, repo string, refs *refSet, exclude string, cfg *repoConfig) (def string, fromHEAD bool, err error) {
	if refs.hasOrigin() || (cfg != nil && cfg.originURL != "") {
		// symbolic-ref also names a branch origin/HEAD points to that is
		// gone (renamed upstream, then pruned).
		out, err := g.run(ctx, repo, "symbolic-ref", "--quiet", originHEAD)
		if b, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "refs/remotes/origin/"); err == nil && ok && b != "" {
			return b, false, g.ask(ctx, repo, refs, b)
		}
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
	}
	candidates := []string{}
	if cfg != nil {
		candidates = append(candidates, cfg.initDefault)
	} else if out, err := g.run(ctx, repo, "config", "--get", "init.defaultBranch"); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	} else if ctx.Err() != nil {
		return "", false, ctx.Err()
	}
	candidates = append(candidates, "main", "master")
	if err := g.ask(ctx, repo, refs, candidates...); err != nil {
		return "", false, err
	}
	for _, b := range candidates {
		if b != "" && len(refs.existing(normalizeBranch(b))) > 0 {
			return normalizeBranch(b), false, nil
		}
	}
	out, err := g.run(ctx, repo, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err == nil {
		if b := strings.TrimSpace(string(out)); b != exclude {
			return b, true, g.ask(ctx, repo, refs, b)
		}
	}
	return "", false, ctx.Err()
}

// protectedBranches are main, master and the default branch, deduplicated.
func protectedBranches(def string) []string {
	p := []string{"main", "master"}
	if def != "" && def != "main" && def != "master" {
		p = append(p, def)
	}
	return p
}

func normalizeBranch(b string) string {
	return strings.TrimPrefix(strings.TrimSpace(b), "refs/heads/")
}

// CheckBranch verifies that in.Repo is a git work tree and in.Branch a
// branch of it (local or on origin) other than main, master and the
// default branch. It returns the default branch and the branch's head,
// the local one when the branch exists both locally and on origin.
func (g *Git) CheckBranch(ctx context.Context, in CheckBranchInput) (CheckBranchResult, error) {
	branch := normalizeBranch(in.Branch)
	url := amp.RepoIsURL(in.Repo)
	var err error
	if in.Repo, err = g.Local(ctx, in.Repo, true); err != nil {
		return CheckBranchResult{}, err
	}
	var cfg *repoConfig
	if g.GitHubRepo.Name == "" {
		// origin's URL names the task's GitHub repository; it is read with
		// init.defaultBranch, in one process.
		c, err := g.readConfig(ctx, in.Repo)
		if err != nil {
			return CheckBranchResult{}, err
		}
		cfg = &c
	}
	var also string
	if cfg != nil {
		also = cfg.initDefault
	}
	refs, err := g.openRefs(ctx, in.Repo, branch, also)
	if err != nil {
		return CheckBranchResult{}, err
	}
	def, fromHEAD, err := g.defaultBranch(ctx, in.Repo, &refs, "", cfg)
	if err != nil {
		return CheckBranchResult{}, fmt.Errorf("finding the default branch of %s: %w", in.Repo, err)
	}
	for _, p := range protectedBranches(def) {
		if branch == p {
			msg := fmt.Sprintf("branch %q of %s is protected (main, master or the default branch %q): refusing to work on it", branch, in.Repo, def)
			if fromHEAD && p == def {
				msg += fmt.Sprintf("; %q was taken for the default branch because HEAD points to it — set origin/HEAD (git remote set-head origin <branch>) or init.defaultBranch if that is wrong", def)
			}
			return CheckBranchResult{}, temporal.NewNonRetryableApplicationError(msg, ErrProtectedBranch, nil)
		}
	}
	head, err := refs.head(in.Repo, branch)
	if local := "refs/heads/" + branch; err == nil && url && refs.existing(branch)[0] != local {
		// A mirror's task branch is ampflow's, made from the URL's the
		// first time, so the runs' checkouts start from the URL's work.
		head, err = g.createBranch(ctx, in.Repo, branch, head)
	}
	if err != nil && in.Create && len(refs.existing(branch)) == 0 && def != "" && len(refs.existing(def)) > 0 {
		head, err = g.createBranch(ctx, in.Repo, branch, refs.commits[refs.existing(def)[0]])
	}
	if err != nil {
		return CheckBranchResult{}, err
	}
	gh := g.GitHubRepo
	if cfg != nil {
		gh, _ = github.ParseRemote(cfg.originURL, g.GitHubHosts...)
	}
	res := CheckBranchResult{DefaultBranch: def, Head: head}
	if r := refs.existing(def); def != "" && len(r) > 0 {
		res.DefaultHead = refs.commits[r[0]]
	}
	if gh.Name != "" {
		res.GitHubRepo = gh.FullName()
	}
	return res, nil
}

// createBranch makes branch at commit in repo, once: a retry finds it
// made. A name git refuses is an ErrBranchMissing.
func (g *Git) createBranch(ctx context.Context, repo, branch, commit string) (string, error) {
	if _, err := g.run(ctx, repo, "check-ref-format", "--branch", branch); err != nil || strings.HasPrefix(branch, "-") {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("branch %q is not a valid branch name in %s", branch, repo), ErrBranchMissing, nil)
	}
	if _, err := g.run(ctx, repo, "branch", branch, commit); err != nil {
		if out, rerr := g.run(ctx, repo, "rev-parse", "--verify", "-q", "refs/heads/"+branch); rerr == nil {
			return strings.TrimSpace(string(out)), nil
		}
		return "", fmt.Errorf("creating branch %s in %s: %w", branch, repo, err)
	}
	return commit, nil
}
