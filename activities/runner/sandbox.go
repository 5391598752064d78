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
	// Hide are directories and files the run does not see: each
	// directory is empty in the sandbox (data_dir, the worker's home), each
	// file empty (a key file, the configuration).
	Hide []string
	// Read are paths the run may read although they lie in Hide: the
	// tool hook's binary, its settings and the MCP configuration ampflow
	// wrote for the run.
	Read []string
	// Write are paths the run may write besides Dir: its CLI's state
	// (HOME, CODEX_HOME), the repository a worktree commits to, the park
	// file's directory.
	Write []string
	// Net, when set, gives the run a network namespace of its own,
	// reaching out only through its ports; nil shares the worker's.
	Net *SandboxNet
}

// bwrapBase are the options of every sandbox: the whole machine
// read-only, fresh /dev, /proc and /tmp, a user namespace without
// capabilities, a pid, IPC, UTS and cgroup namespace of its own, a session
// of its own (no terminal to inject into), and the whole sandbox killed
// when the worker dies.
var bwrapBase = []string{
	"--die-with-parent", "--new-session",
	// A user namespace of its own with no capability in it, also when
	// the worker is root: nothing inside can unmount what hides a
	// directory or remount / writable.
	"--unshare-user", "--cap-drop", "ALL",
	"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	"--ro-bind", "/", "/",
	"--dev", "/dev",
	"--proc", "/proc",
	"--tmpfs", "/tmp",
}

// wrap is argv run inside the sandbox, in dir. A path to write that holds
// a hidden one (or /tmp) would show it, and is refused; one to read that
// does is left out, as is one outside every hidden directory, which is
// readable already.
func (b *Sandbox) wrap(dir string, argv []string) ([]string, error) {
	bin := b.Bin
	if bin == "" {
		bin = "bwrap"
	}
	hide := sortedPaths(b.Hide)
	out := append([]string{bin}, bwrapBase...)
	out = append(out, hiddenSockets()...)
	for _, h := range hide {
		switch st, err := os.Stat(h); {
		case err != nil:
			// Nothing there to hide.
		case st.IsDir():
			out = append(out, "--tmpfs", h)
		default:
			out = append(out, "--ro-bind", os.DevNull, h) // a secret file reads empty
		}
	}
	read := b.Read
	if b.Net != nil {
		out = append(out, "--unshare-net")
		read = append(append([]string{}, read...), b.Net.Bridge[0])
		for _, p := range b.Net.Ports {
			read = append(read, p.Socket)
		}
		if c := b.Net.Catch; c != nil {
			// The bridge's first stage alone holds these (sandbox_catch.go).
			for _, cap := range catchCaps {
				out = append(out, "--cap-add", cap)
			}
			read = append(read, c.Socket)
		}
		argv = b.Net.argv(argv)
	}
	// /tmp is the run's own, empty: what it is given there is hidden too.
	hidden := append([]string{"/tmp"}, hide...)
	for _, r := range sortedPaths(read) {
		if !within(r, hidden) || holdsNone(r, hidden) != nil {
			continue
		}
		out = append(out, "--ro-bind-try", r, r)
	}
	for _, w := range sortedPaths(append([]string{dir}, b.Write...)) {
		if err := holdsNone(w, hidden); err != nil {
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

// daemonSockets are sockets of the machine's daemons that run what they
// are asked outside any sandbox: the container engines, the system bus.
var daemonSockets = []string{
	"/run/docker.sock", "/run/containerd/containerd.sock", "/run/podman/podman.sock",
	"/run/dbus/system_bus_socket", "/run/systemd/private",
}

// hiddenSockets are the options that hide the sockets a run could ask a
// daemon outside the sandbox through: every user's session directory
// (the user's bus, systemd, gpg and ssh agents) and daemonSockets.
func hiddenSockets() []string {
	var out []string
	if st, err := os.Stat("/run/user"); err == nil && st.IsDir() {
		out = append(out, "--tmpfs", "/run/user")
	}
	for _, p := range daemonSockets {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeSocket != 0 {
			out = append(out, "--ro-bind", os.DevNull, p)
		}
	}
	return out
}

// sortedPaths is paths cleaned and resolved (a symlink is mounted at
// what it names, where the sandbox meets it), without repeats, parents
// before children, so a mount inside another comes after it.
func sortedPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
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
