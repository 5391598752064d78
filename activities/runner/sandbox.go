package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Sandbox confines a run with bubblewrap (docs/sandbox.md): the CLI sees
// the machine read-only, writes only its Dir, a private /tmp and Write,
// sees nothing of Hide but Read and Write inside it, and lives in a pid
// namespace of its own, so it sees and signals no process outside it and
// every process it starts, however detached, ends with it and with the
// worker.
type Sandbox struct {
	// Bin is the bwrap binary; empty means "bwrap" on the worker's PATH.
	Bin string
	// Hide are directories the run does not see: each is an empty
	// directory in the sandbox (data_dir, the worker's home).
	Hide []string
	// Read are paths the run may read although they lie in Hide: the
	// tool hook's binary, its settings and the MCP configuration ampflow
	// wrote for the run.
	Read []string
	// Write are paths the run may write besides Dir: its CLI's state
	// (HOME, CODEX_HOME), the repository a worktree commits to, the park
	// file's directory.
	Write []string
}

// bwrapBase are the options of every sandbox: the whole machine
// read-only, fresh /dev, /proc and /tmp, a pid, IPC, UTS and cgroup
// namespace of its own, a session of its own (no terminal to inject
// into), and the whole sandbox killed when the worker dies.
var bwrapBase = []string{
	"--die-with-parent", "--new-session",
	"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	"--ro-bind", "/", "/",
	"--dev", "/dev",
	"--proc", "/proc",
	"--tmpfs", "/tmp",
}

// wrap is argv run inside the sandbox, in dir. A path to read or write
// that holds a hidden one would show it, and is refused; one to read
// outside every hidden directory is already readable, and is left out.
func (b *Sandbox) wrap(dir string, argv []string) ([]string, error) {
	bin := b.Bin
	if bin == "" {
		bin = "bwrap"
	}
	hide := sortedPaths(b.Hide)
	out := append([]string{bin}, bwrapBase...)
	for _, h := range hide {
		out = append(out, "--tmpfs", h)
	}
	// /tmp is the run's own, empty: what it is given there is hidden too.
	hidden := append([]string{"/tmp"}, hide...)
	for _, r := range sortedPaths(b.Read) {
		if !within(r, hidden) {
			continue
		}
		if err := holdsNone(r, hide); err != nil {
			return nil, err
		}
		out = append(out, "--ro-bind-try", r, r)
	}
	for _, w := range sortedPaths(append([]string{dir}, b.Write...)) {
		if err := holdsNone(w, hide); err != nil {
			return nil, err
		}
		out = append(out, "--bind-try", w, w)
	}
	out = append(out, "--chdir", dir, "--")
	return append(out, argv...), nil
}

// holdsNone refuses a path to bind that is a hidden directory or holds
// one.
func holdsNone(path string, hide []string) error {
	for _, h := range hide {
		if within(h, []string{path}) {
			return fmt.Errorf("the sandbox would show %s, which it hides, through %s", h, path)
		}
	}
	return nil
}

// sortedPaths is paths cleaned, without repeats, parents before children,
// so a mount inside another comes after it.
func sortedPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		out = append(out, filepath.Clean(p))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CheckSandbox runs true in a sandbox with bin (empty: bwrap on PATH)
// and says why it cannot, in words an operator can act on.
func CheckSandbox(ctx context.Context, bin string) error {
	if bin == "" {
		bin = "bwrap"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return fmt.Errorf("bubblewrap (%s) is not installed: %w", bin, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append(append([]string{}, bwrapBase...), "--", "true")
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bubblewrap (%s) cannot make a sandbox here: %v: %s", path, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// within says whether path is one of dirs or lies in one.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Paths lists the absolute paths that exist among values (an environment's
// values, arguments, a command): what a run is given to read.
func Paths(values ...string) []string {
	var out []string
	for _, v := range values {
		if _, val, ok := strings.Cut(v, "="); ok && strings.HasPrefix(val, "/") {
			v = val
		}
		for _, p := range filepath.SplitList(v) {
			if !filepath.IsAbs(p) {
				continue
			}
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}
