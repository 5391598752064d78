package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A run's checkout: a clone of the task's repository that reads the
// repository's objects and writes only its own, made for the executor on
// the task's branch or for the reviewer at the result's commit, whose
// branch FetchBack brings back into the repository.

// AddTaskWorktree gives a run a checkout of its own of repo at dir with
// branch checked out, creating the branch in repo from the default
// branch's head (see DefaultBranch) when it does not exist. The checkout
// is a clone: it reads repo's objects (git's alternates) and writes only
// its own, so nothing done in it moves repo's refs, writes repo's hooks or
// configuration, or touches repo's checkout; FetchBack brings its branch
// into repo. A dir that is already such a clone is kept, so a retried call
// succeeds. A branch checked out in a worktree of repo (the user's own
// checkout, say), or held by another clone beside dir, is refused with
// ErrBranchCheckedOut and what frees it.
//
// Only the checks and the branch's creation hold the repository's lock,
// not the clone: runs that start at once make their checkouts side by
// side.
func AddTaskWorktree(ctx context.Context, repo, dir, branch string) error {
	release, err := claimCheckout(ctx, repo, dir, branch)
	if err != nil || release == nil {
		return err
	}
	defer release()
	if err := clone(ctx, repo, dir); err != nil {
		return err
	}
	if _, err := git(ctx, dir, "checkout", "-q", "-B", branch, "refs/remotes/origin/"+branch); err != nil {
		return err
	}
	// Last: a checkout without it is one cut short, and is made again.
	if err := os.WriteFile(branchFile(dir), []byte(branch+"\n"), 0o600); err != nil {
		return fmt.Errorf("adding a checkout at %s: %w", dir, err)
	}
	return nil
}

// making are the checkouts being made outside the repository's lock, by
// repository and branch: claimCheckout refuses a second one.
var making sync.Map // repo path + "\x00" + branch -> dir

// claimCheckout checks, under the repository's lock, that dir may have a
// checkout of branch, creates the branch when it is missing, and claims
// it until release. A nil release with no error: dir has it already.
func claimCheckout(ctx context.Context, repo, dir, branch string) (release func(), err error) {
	defer lockRepo(repo)()
	if _, err := git(ctx, repo, "check-ref-format", "--branch", branch); err != nil {
		return nil, fmt.Errorf("adding a checkout for branch %q: not a valid branch name", branch)
	}
	ref := "refs/heads/" + branch
	if TaskBranch(dir) == branch {
		// Made before, for this task: kept as the agent left it, on
		// whatever branch, so nothing of its work is lost.
		return nil, nil
	}
	wts, err := worktrees(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("adding a checkout for branch %s: %w", branch, err)
	}
	for _, w := range wts {
		if samePath(w.path, dir) && w.branch == ref {
			return nil, nil // a worktree of the task from before checkouts were clones
		}
		if w.branch == ref {
			return nil, fmt.Errorf("adding a checkout for branch %s of %s: %w: %s; free it with `git -C %s switch --detach` "+
				"(or switch that worktree to another branch), or remove it with `git -C %s worktree remove %s`",
				branch, repo, ErrBranchCheckedOut, w.path, w.path, repo, w.path)
		}
	}
	// Claimed before the checkouts beside dir are read: one being made
	// writes its branch file before it lets go of its claim, so it is
	// seen one way or the other.
	key := repoKey(repo) + "\x00" + branch
	if other, taken := making.LoadOrStore(key, dir); taken && !samePath(other.(string), dir) {
		return nil, fmt.Errorf("adding a checkout for branch %s of %s: %w: ampflow is making a checkout of it for another task at %s",
			branch, repo, ErrBranchCheckedOut, other)
	}
	claimed := func() { making.Delete(key) }
	defer func() {
		if err != nil {
			claimed()
		}
	}()
	if other := siblingOn(dir, branch); other != "" {
		return nil, fmt.Errorf("adding a checkout for branch %s of %s: %w: ampflow's checkout %s of another task works on it; "+
			"it goes when that task ends", branch, repo, ErrBranchCheckedOut, other)
	}
	if _, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", ref); err != nil {
		_, base, err := DefaultBranch(ctx, repo)
		if err != nil {
			return nil, fmt.Errorf("adding a checkout for new branch %s: %w", branch, err)
		}
		if _, err := git(ctx, repo, "branch", "--no-track", branch, base); err != nil {
			return nil, err
		}
	}
	return claimed, nil
}

// branchFile keeps, beside a task's checkout (where a sandboxed run
// cannot write), the branch the checkout was made for.
func branchFile(dir string) string { return filepath.Clean(dir) + ".branch" }

// TaskBranch is the branch AddTaskWorktree made the checkout at dir for,
// "" when it made none there: the branch ampflow brings back into the
// repository, whatever the agent has checked out.
func TaskBranch(dir string) string {
	b, err := os.ReadFile(branchFile(dir))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// AddDetachedWorktree gives a reviewer a checkout of its own of repo at
// dir with commit checked out and no branch: a clone, as AddTaskWorktree
// makes. A dir that is already such a clone at that commit is kept.
func AddDetachedWorktree(ctx context.Context, repo, dir, commit string) error {
	unlock := lockRepo(repo)
	want, err := git(ctx, repo, "rev-parse", "--verify", commit+"^{commit}")
	unlock()
	if err != nil {
		return fmt.Errorf("adding a detached checkout at %s: %w", commit, err)
	}
	if _, ok := cloneBranch(ctx, dir); ok {
		head, _ := git(ctx, dir, "rev-parse", "HEAD")
		if cur, _ := cloneBranch(ctx, dir); head == want && cur == "" {
			return nil
		}
		return fmt.Errorf("adding a detached checkout at %s: %s is already a checkout at %s", commit, dir, head)
	}
	if err := clone(ctx, repo, dir); err != nil {
		return err
	}
	_, err = git(ctx, dir, "checkout", "-q", "--detach", want)
	return err
}

// clone makes dir a clone of repo that shares repo's objects, without a
// checkout yet. Cloning runs nothing of repo's: the objects and refs are
// read, no hook or configuration of repo's is.
func clone(ctx context.Context, repo, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("adding a checkout at %s: %w", dir, err)
	}
	if _, err := os.Stat(dir); err == nil {
		// A clone cut short (a worker killed mid-clone) holds nothing of
		// a run's yet.
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("adding a checkout at %s: removing a partial one: %w", dir, err)
		}
	}
	top, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("adding a checkout of %s: %w", repo, err)
	}
	_, err = git(ctx, filepath.Dir(dir), "clone", "-q", "--shared", "--no-checkout", "--", top, dir)
	return err
}

// cloneBranch says whether dir is the top of a clone (not a worktree of
// another repository), and the ref it has checked out ("" when detached).
func cloneBranch(ctx context.Context, dir string) (string, bool) {
	if st, err := os.Stat(filepath.Join(dir, ".git")); err != nil || !st.IsDir() {
		return "", false
	}
	ref, err := git(ctx, dir, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		return "", true
	}
	return ref, true
}

// siblingOn names another task's checkout beside dir made for branch, or "".
func siblingOn(dir, branch string) string {
	entries, _ := os.ReadDir(filepath.Dir(dir))
	for _, e := range entries {
		other := filepath.Join(filepath.Dir(dir), e.Name())
		if e.IsDir() && !samePath(other, dir) && TaskBranch(other) == branch {
			return other
		}
	}
	return ""
}

// FetchBack brings branches of the run's checkout at dir into repo, where
// ampflow checks the run's result and the user finds it: each of repo's
// branches is set to the checkout's, as a worktree sharing repo's refs
// would have it. Only those branches move; nothing of the checkout's but
// its objects enters repo, and fetching runs nothing of the checkout's.
func FetchBack(ctx context.Context, repo, dir string, branches ...string) error {
	if len(branches) == 0 {
		return nil
	}
	defer lockRepo(repo)()
	args := []string{"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--", dir}
	for _, b := range branches {
		if _, err := git(ctx, repo, "check-ref-format", "--branch", b); err != nil {
			return fmt.Errorf("fetching branch %q back: not a valid branch name", b)
		}
		args = append(args, "+refs/heads/"+b+":refs/heads/"+b)
	}
	_, err := git(ctx, repo, args...)
	return err
}

// RemoveWorktree removes the run's checkout at dir, with whatever it
// holds (call Salvage, then FetchBack, first). A worktree of repo there
// (from before checkouts were clones) is removed as git's worktree. A dir
// that is not there is not an error.
func RemoveWorktree(ctx context.Context, repo, dir string) error {
	defer lockRepo(repo)()
	wts, err := worktrees(ctx, repo)
	if err != nil {
		return err
	}
	listed := false
	for _, w := range wts {
		if samePath(w.path, dir) {
			listed = true
			if _, err := git(ctx, repo, "worktree", "remove", "--force", "--force", w.path); err != nil {
				return err
			}
		}
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) && !listed {
		// Gone already, by an earlier call: nothing to prune.
		return removeBranchFile(dir)
	}
	if _, err := git(ctx, repo, "worktree", "prune"); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the checkout %s: %w", dir, err)
	}
	return removeBranchFile(dir)
}

// removeBranchFile forgets the branch of the checkout at dir.
func removeBranchFile(dir string) error {
	if err := os.Remove(branchFile(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the checkout %s: %w", dir, err)
	}
	return nil
}

// Objects is the object directory of the repository at repo, which the
// checkouts AddTaskWorktree makes of it read.
func Objects(ctx context.Context, repo string) (string, error) {
	common, err := git(ctx, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return filepath.Join(common, "objects"), nil
}
