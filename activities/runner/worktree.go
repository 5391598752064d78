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
	m, _ := repoLocks.LoadOrStore(repoKey(repo), &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// repoKey is the repository at repo as its locks know it: its absolute
// path, symbolic links resolved.
func repoKey(repo string) string {
	key, err := filepath.Abs(repo)
	if err == nil {
		if r, err := filepath.EvalSymlinks(key); err == nil {
			key = r
		}
	}
	return key
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
