package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
)

// A task whose repository is a URL works in this worker's mirror of it:
// data_dir/repos/<MirrorName>, a repository with a work tree that is
// never checked out. It has a work tree, not a bare one, because every
// step of a task (CheckBranch, the runs' checkouts, CI, the push's clean
// repository) opens its repository as a work tree: a mirror that is one
// needs no second path through them. The URL's branches are fetched into
// refs/remotes/origin/*, so a fetch never moves the task branches
// ampflow keeps in refs/heads/*; those go back to the URL by a push.

// mirrorLocks serialises the making and fetching of each mirror in this
// worker: two tasks on one repository fetch one after the other.
var mirrorLocks sync.Map // mirror dir -> *sync.Mutex

func lockMirror(dir string) func() {
	m, _ := mirrorLocks.LoadOrStore(dir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// MirrorsDir is where a worker with dataDir keeps its mirrors; "" for
// none.
func MirrorsDir(dataDir string) string {
	if dataDir == "" {
		return ""
	}
	return filepath.Join(dataDir, "repos")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// MirrorName is the directory under data_dir/repos that holds the mirror
// of url: the repository's name, for the people who look there, and a
// hash of the whole URL, so two repositories of one name stay apart.
func MirrorName(url string) string {
	base := strings.TrimSuffix(strings.TrimRight(url, "/"), ".git")
	if i := strings.LastIndexAny(base, "/:"); i >= 0 {
		base = base[i+1:]
	}
	base = strings.Trim(unsafeName.ReplaceAllString(base, "-"), "-.")
	if base == "" {
		base = "repo"
	}
	sum := sha256.Sum256([]byte(url))
	return base + "-" + hex.EncodeToString(sum[:])[:12]
}

// Local is the local git directory a task's repository is worked in:
// repo itself when it is a path; for a URL, this worker's mirror of it,
// made when missing. With fetch, the mirror first takes the URL's
// branches as they are now, as before a run or a branch check.
func (g *Git) Local(ctx context.Context, repo string, fetch bool) (string, error) {
	if !amp.RepoIsURL(repo) {
		return repo, nil
	}
	if g == nil || g.Mirrors == "" {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("repository %s is a URL, and this worker keeps no mirrors (no data_dir)", redactURL(repo)), ErrNotWorkTree, nil)
	}
	dir := filepath.Join(g.Mirrors, MirrorName(repo))
	defer lockMirror(dir)()
	made, err := g.makeMirror(ctx, repo, dir)
	if err != nil {
		return "", err
	}
	if fetch || made {
		if err := g.fetchMirror(ctx, repo, dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// makeMirror makes the mirror at dir once; made says it did now. A dir
// without a finished mirror (a worker killed while making it) is made
// again.
func (g *Git) makeMirror(ctx context.Context, url, dir string) (made bool, err error) {
	done := filepath.Join(dir, ".git", "ampflow-mirror")
	if _, err := os.Stat(done); err == nil {
		return false, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("making the mirror of %s: %w", redactURL(url), err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("making the mirror of %s: %w", redactURL(url), err)
	}
	// No template: nothing of the system's or user's template directory
	// (hooks included) is copied in. HEAD is on a branch no one makes,
	// so the default branch the fetch keeps is never checked out here.
	if _, err := g.run(ctx, dir, "init", "-q", "--template=", "--initial-branch="+mirrorHead, dir); err != nil {
		return false, fmt.Errorf("making the mirror of %s: %w", redactURL(url), err)
	}
	// origin's URL tells CheckBranch the GitHub repository; fetches and
	// pushes name the URL itself, not origin.
	if _, err := g.run(ctx, dir, "config", "remote.origin.url", url); err != nil {
		return false, fmt.Errorf("making the mirror of %s: %w", redactURL(url), err)
	}
	if err := os.WriteFile(done, []byte(url+"\n"), 0o600); err != nil {
		return false, fmt.Errorf("making the mirror of %s: %w", redactURL(url), err)
	}
	return true, nil
}

// mirrorHead is the unborn branch a mirror's HEAD is on when made.
const mirrorHead = "ampflow/mirror-head"

// fetchMirror brings origin's branches and HEAD into the mirror, pruning
// those gone, and sets the local default branch to origin's, as a fresh
// clone has it, for an agent that diffs against main; the task branches
// in refs/heads/* are left alone.
func (g *Git) fetchMirror(ctx context.Context, url, dir string) error {
	if _, err := g.run(ctx, dir, "fetch", "-q", "--prune", "--no-tags", "--no-write-fetch-head", "--",
		url, "+refs/heads/*:refs/remotes/origin/*"); err != nil {
		return fmt.Errorf("fetching %s into its mirror %s: %w", redactURL(url), dir, err)
	}
	out, err := g.run(ctx, dir, "ls-remote", "--symref", "--", url, "HEAD")
	if err != nil {
		return fmt.Errorf("reading the default branch of %s: %w", redactURL(url), err)
	}
	for line := range strings.Lines(string(out)) {
		target, name, _ := strings.Cut(strings.TrimSpace(line), "\t")
		branch, ok := strings.CutPrefix(target, "ref: refs/heads/")
		if ok && name == "HEAD" {
			if _, err := g.run(ctx, dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/"+branch); err != nil {
				return fmt.Errorf("setting the default branch of the mirror %s: %w", dir, err)
			}
			if head, _ := g.run(ctx, dir, "symbolic-ref", "-q", "HEAD"); strings.TrimSpace(string(head)) == "refs/heads/"+branch {
				continue // checked out here by hand: not moved under someone's feet
			}
			if _, err := g.run(ctx, dir, "update-ref", "refs/heads/"+branch, "refs/remotes/origin/"+branch); err != nil {
				return fmt.Errorf("setting the default branch of the mirror %s: %w", dir, err)
			}
		}
	}
	return nil
}

// LocalAt is Local for a step that needs commit (when set) and the
// task's branch in the mirror: a mirror that lacks either, because
// another host ran the task, fetches the URL and takes its branch
// (TakeBranch) first.
func (g *Git) LocalAt(ctx context.Context, repo, branch, commit string) (string, error) {
	dir, err := g.Local(ctx, repo, false)
	if err != nil || !amp.RepoIsURL(repo) {
		return dir, err
	}
	branch = normalizeBranch(branch)
	has := func(rev string) bool {
		_, err := g.run(ctx, dir, "rev-parse", "--verify", "-q", rev+"^{commit}")
		return err == nil
	}
	if (commit == "" || has(commit)) && (branch == "" || has("refs/heads/"+branch)) {
		return dir, nil
	}
	if _, err := g.Local(ctx, repo, true); err != nil {
		return "", err
	}
	if branch != "" {
		if err := g.TakeBranch(ctx, dir, branch); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// TakeBranch sets the task branch of the mirror at dir to the URL's, as
// the last fetch brought it, when the mirror has none or one the URL's
// contains: a host that takes a task over works on from what the host
// before it pushed. A mirror branch with commits the URL lacks is kept.
func (g *Git) TakeBranch(ctx context.Context, dir, branch string) error {
	defer lockMirror(dir)()
	branch = normalizeBranch(branch)
	out, err := g.run(ctx, dir, "rev-parse", "--verify", "-q", "refs/remotes/origin/"+branch)
	if err != nil {
		return nil // not on the URL yet
	}
	remote := strings.TrimSpace(string(out))
	if out, err := g.run(ctx, dir, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
		local := strings.TrimSpace(string(out))
		if local == remote {
			return nil
		}
		if _, err := g.run(ctx, dir, "merge-base", "--is-ancestor", local, remote); err != nil {
			return nil
		}
	}
	if _, err := g.run(ctx, dir, "update-ref", "refs/heads/"+branch, remote); err != nil {
		return fmt.Errorf("taking branch %s from the URL into the mirror %s: %w", branch, dir, err)
	}
	return nil
}
