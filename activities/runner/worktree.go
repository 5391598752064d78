package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ampflow/ampflow/activities/gitsafe"
)

// ErrBranchCheckedOut is returned (wrapped, with the fix) by AddTaskWorktree
// when the branch is checked out in another worktree.
var ErrBranchCheckedOut = errors.New("branch is checked out in another worktree")

// repoLocks serialises git worktree commands per repository.
var repoLocks sync.Map // absolute repo path -> *sync.Mutex

func lockRepo(repo string) func() {
	key, err := filepath.Abs(repo)
	if err == nil {
		if r, err := filepath.EvalSymlinks(key); err == nil {
			key = r
		}
	}
	m, _ := repoLocks.LoadOrStore(key, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// git runs git in dir and returns its trimmed standard output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitEnv(ctx, dir, nil, args...)
}

// gitEnv runs git as gitsafe has it, with env after its environment:
// nothing the repository names runs, its filters and diff drivers
// included (a commit refreshes the index, which runs the clean filter),
// and the worker's environment stays out.
func gitEnv(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	drivers, err := gitsafe.Drivers(ctx, "git", dir)
	if err != nil {
		return "", fmt.Errorf("git %s in %s: reading the repository's filters: %w", strings.Join(args, " "), dir, err)
	}
	// A repository's own top names its git directory and work tree
	// outright: a core.worktree in its configuration (which a run's
	// checkout holds and the agent may write) moves neither.
	if st, err := os.Stat(filepath.Join(dir, ".git")); err == nil && st.IsDir() {
		args = append([]string{"--git-dir=" + filepath.Join(dir, ".git"), "--work-tree=" + dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", gitsafe.Args(drivers, args...)...)
	cmd.Dir = dir
	cmd.Env = gitsafe.Env(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// DefaultBranch returns the repository's default branch and its head
// commit: origin's HEAD when the repository has one, else the branch checked
// out in its main worktree.
func DefaultBranch(ctx context.Context, repo string) (branch, commit string, err error) {
	if ref, err := git(ctx, repo, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"); err == nil && ref != "" {
		commit, err := git(ctx, repo, "rev-parse", "--verify", ref+"^{commit}")
		if err == nil {
			return strings.TrimPrefix(ref, "refs/remotes/origin/"), commit, nil
		}
	}
	wts, err := worktrees(ctx, repo)
	if err != nil {
		return "", "", err
	}
	if len(wts) == 0 || wts[0].branch == "" {
		return "", "", fmt.Errorf("finding the default branch of %s: its main worktree has no branch checked out", repo)
	}
	ref := wts[0].branch
	commit, err = git(ctx, repo, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return "", "", fmt.Errorf("finding the default branch of %s: %w", repo, err)
	}
	return strings.TrimPrefix(ref, "refs/heads/"), commit, nil
}

type worktree struct {
	path, head, branch string // branch as refs/heads/NAME, "" when detached
}

func worktrees(ctx context.Context, repo string) ([]worktree, error) {
	out, err := git(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var list []worktree
	for _, block := range strings.Split(out, "\n\n") {
		var w worktree
		for _, l := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(l, " ")
			switch k {
			case "worktree":
				w.path = v
			case "HEAD":
				w.head = v
			case "branch":
				w.branch = v
			}
		}
		if w.path != "" {
			list = append(list, w)
		}
	}
	return list, nil
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

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
func AddTaskWorktree(ctx context.Context, repo, dir, branch string) error {
	defer lockRepo(repo)()
	if _, err := git(ctx, repo, "check-ref-format", "--branch", branch); err != nil {
		return fmt.Errorf("adding a checkout for branch %q: not a valid branch name", branch)
	}
	ref := "refs/heads/" + branch
	if TaskBranch(dir) == branch {
		// Made before, for this task: kept as the agent left it, on
		// whatever branch, so nothing of its work is lost.
		return nil
	}
	wts, err := worktrees(ctx, repo)
	if err != nil {
		return fmt.Errorf("adding a checkout for branch %s: %w", branch, err)
	}
	for _, w := range wts {
		if samePath(w.path, dir) && w.branch == ref {
			return nil // a worktree of the task from before checkouts were clones
		}
		if w.branch == ref {
			return fmt.Errorf("adding a checkout for branch %s of %s: %w: %s; free it with `git -C %s switch --detach` "+
				"(or switch that worktree to another branch), or remove it with `git -C %s worktree remove %s`",
				branch, repo, ErrBranchCheckedOut, w.path, w.path, repo, w.path)
		}
	}
	if other := siblingOn(dir, branch); other != "" {
		return fmt.Errorf("adding a checkout for branch %s of %s: %w: ampflow's checkout %s of another task works on it; "+
			"it goes when that task ends", branch, repo, ErrBranchCheckedOut, other)
	}
	if _, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", ref); err != nil {
		_, base, err := DefaultBranch(ctx, repo)
		if err != nil {
			return fmt.Errorf("adding a checkout for new branch %s: %w", branch, err)
		}
		if _, err := git(ctx, repo, "branch", "--no-track", branch, base); err != nil {
			return err
		}
	}
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
	defer lockRepo(repo)()
	want, err := git(ctx, repo, "rev-parse", "--verify", commit+"^{commit}")
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
	for _, w := range wts {
		if samePath(w.path, dir) {
			if _, err := git(ctx, repo, "worktree", "remove", "--force", "--force", w.path); err != nil {
				return err
			}
		}
	}
	if _, err := git(ctx, repo, "worktree", "prune"); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the checkout %s: %w", dir, err)
	}
	if err := os.Remove(branchFile(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the checkout %s: %w", dir, err)
	}
	return nil
}

// SalvageRef names the n-th salvage branch of a task:
// ampflow/salvage/<task>/<n>.
func SalvageRef(task string, n int) string {
	return fmt.Sprintf("ampflow/salvage/%s/%d", task, n)
}

// NextSalvageRef returns the first SalvageRef of task, counting from 1, that
// no branch of the repository at dir uses yet.
func NextSalvageRef(ctx context.Context, dir, task string) (string, error) {
	for n := 1; ; n++ {
		ref := SalvageRef(task, n)
		_, local := git(ctx, dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+ref)
		_, fromRepo := git(ctx, dir, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+ref)
		if local != nil && fromRepo != nil {
			return ref, nil
		}
		if n > 10000 {
			return "", fmt.Errorf("finding a free salvage branch for task %s: too many", task)
		}
	}
}

// Salvage commits whatever is uncommitted in the worktree at dir (changed,
// new and deleted files; ignored ones stay out) and returns the commit, or
// "" when there was nothing to commit. With branch empty it commits to the
// branch checked out there; otherwise it commits on top of HEAD to that
// branch (such as a NextSalvageRef), leaving the worktree's own branch,
// index and files as they were.
func Salvage(ctx context.Context, dir, branch, message string) (string, error) {
	if message == "" {
		message = "ampflow: salvage uncommitted work"
	}
	status, err := git(ctx, dir, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=all")
	if err != nil {
		return "", fmt.Errorf("salvaging %s: %w", dir, err)
	}
	if status == "" {
		return "", nil
	}
	ident := identity(ctx, dir)
	if branch == "" {
		if _, err := git(ctx, dir, "add", "-A"); err != nil {
			return "", fmt.Errorf("salvaging %s: %w", dir, err)
		}
		if _, err := git(ctx, dir, append(ident, "commit", "--no-verify", "-q", "-m", message)...); err != nil {
			return "", fmt.Errorf("salvaging %s: %w", dir, err)
		}
		return git(ctx, dir, "rev-parse", "HEAD")
	}

	head, tree, err := snapshot(ctx, dir)
	if err != nil {
		return "", err
	}
	return commitTo(ctx, dir, branch, head, tree, append(ident, "commit-tree", tree, "-m", message))
}

// snapshot writes the worktree at dir as it is, uncommitted files
// included, to a tree, through a private index so the worktree's own is
// left alone. head is "" in a repository with no commit yet.
func snapshot(ctx context.Context, dir string) (head, tree string, err error) {
	idx, err := os.CreateTemp("", "ampflow-salvage-index-*")
	if err != nil {
		return "", "", fmt.Errorf("salvaging %s: %w", dir, err)
	}
	idx.Close()
	defer os.Remove(idx.Name())
	env := []string{"GIT_INDEX_FILE=" + idx.Name()}
	head, headErr := git(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if headErr == nil {
		if _, err := gitEnv(ctx, dir, env, "read-tree", head); err != nil {
			return "", "", fmt.Errorf("salvaging %s: %w", dir, err)
		}
	} else {
		head = ""
	}
	if _, err := gitEnv(ctx, dir, env, "add", "-A"); err != nil {
		return "", "", fmt.Errorf("salvaging %s: %w", dir, err)
	}
	tree, err = gitEnv(ctx, dir, env, "write-tree")
	if err != nil {
		return "", "", fmt.Errorf("salvaging %s: %w", dir, err)
	}
	return head, tree, nil
}

// commitTo commits tree (on head, when there is one) with the commit-tree
// arguments args and points branch at the commit.
func commitTo(ctx context.Context, dir, branch, head, tree string, args []string) (string, error) {
	if head != "" {
		args = append(args, "-p", head)
	}
	commit, err := git(ctx, dir, args...)
	if err != nil {
		return "", fmt.Errorf("salvaging %s: %w", dir, err)
	}
	if _, err := git(ctx, dir, "update-ref", "-m", "ampflow salvage", "refs/heads/"+branch, commit); err != nil {
		return "", fmt.Errorf("salvaging %s to %s: %w", dir, branch, err)
	}
	return commit, nil
}

// SalvageTask commits whatever is uncommitted in the task's worktree at
// dir to the task's next salvage branch (NextSalvageRef) and returns the
// branch and commit, or "" when there was nothing to commit. Work the
// last salvage branch holds already, on the same HEAD, is not committed
// again: a retried or repeated salvage makes no second branch.
func SalvageTask(ctx context.Context, dir, task, message string) (ref, commit string, err error) {
	if message == "" {
		message = "ampflow: salvage uncommitted work of " + task
	}
	status, err := git(ctx, dir, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=all")
	if err != nil {
		return "", "", fmt.Errorf("salvaging %s: %w", dir, err)
	}
	if status == "" {
		return "", "", nil
	}
	head, tree, err := snapshot(ctx, dir)
	if err != nil {
		return "", "", err
	}
	next, err := NextSalvageRef(ctx, dir, task)
	if err != nil {
		return "", "", err
	}
	if n := salvageNumber(next); n > 1 {
		last := "refs/heads/" + SalvageRef(task, n-1)
		lastTree, _ := git(ctx, dir, "rev-parse", "--verify", "--quiet", last+"^{tree}")
		lastParent, _ := git(ctx, dir, "rev-parse", "--verify", "--quiet", last+"^1")
		if lastTree == tree && lastParent == head {
			c, err := git(ctx, dir, "rev-parse", last)
			return SalvageRef(task, n-1), c, err
		}
	}
	c, err := commitTo(ctx, dir, next, head, tree, append(identity(ctx, dir), "commit-tree", tree, "-m", message))
	if err != nil {
		return "", "", err
	}
	return next, c, nil
}

func salvageNumber(ref string) int {
	n, _ := strconv.Atoi(ref[strings.LastIndex(ref, "/")+1:])
	return n
}

// BranchWorktree returns the path of the worktree of repo that has branch
// checked out (the main checkout included), or "" when none has.
func BranchWorktree(ctx context.Context, repo, branch string) (string, error) {
	wts, err := worktrees(ctx, repo)
	if err != nil {
		return "", fmt.Errorf("listing the worktrees of %s: %w", repo, err)
	}
	for _, w := range wts {
		if w.branch == "refs/heads/"+branch {
			return w.path, nil
		}
	}
	return "", nil
}

// identity supplies a committer when the repository has none configured.
func identity(ctx context.Context, dir string) []string {
	if _, err := git(ctx, dir, "var", "GIT_COMMITTER_IDENT"); err == nil {
		if _, err := git(ctx, dir, "var", "GIT_AUTHOR_IDENT"); err == nil {
			return nil
		}
	}
	return []string{"-c", "user.name=ampflow", "-c", "user.email=ampflow@localhost"}
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
