package runner

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needSandbox fails a test where bubblewrap cannot sandbox: this machine
// kind can, and CI installs it.
func needSandbox(t *testing.T) {
	t.Helper()
	if err := CheckSandbox(context.Background(), ""); err != nil {
		t.Fatalf("the sandbox tests need bubblewrap: %v (apt-get install bubblewrap)", err)
	}
}

// TestSandboxConfines: a sandboxed run writes its Dir and what Write
// names, and nothing else; sees nothing of Hide but what Read and Write
// name; sees no process of the worker's, nor the worker's environment;
// and every process it started, detached or not, is gone when it ends.
func TestSandboxConfines(t *testing.T) {
	needSandbox(t)
	data := t.TempDir() // the worker's data_dir
	secret := filepath.Join(data, "decision.key")
	if err := os.WriteFile(secret, []byte("the decision key"), 0o600); err != nil {
		t.Fatal(err)
	}
	hookDir := filepath.Join(data, "hooks")
	parks := filepath.Join(data, "parks")
	home := filepath.Join(data, "homes", "executor")
	for _, d := range []string{hookDir, parks, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	hookFile := filepath.Join(hookDir, "settings.json")
	if err := os.WriteFile(hookFile, []byte("hook settings"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "decision.key") // auth.decision_key_file, outside data_dir
	if err := os.WriteFile(keyFile, []byte("KEYFILE"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir() // another task's checkout, the user's files
	if err := os.WriteFile(filepath.Join(outside, "theirs.txt"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "detached.pid")
	s := scriptSpec(t, `
probe() { if eval "$2" >/dev/null 2>&1; then echo "$1=yes"; else echo "$1=no"; fi; }
{
probe read_secret "cat `+secret+`"
probe read_key_file "grep -q KEYFILE `+keyFile+`"
probe read_hook "cat `+hookFile+`"
probe write_hook "echo x >> `+hookFile+`"
probe write_dir "echo x > ./mine.txt"
probe write_home "echo x > `+home+`/state"
probe write_park "echo x > `+parks+`/p.json"
probe write_outside "echo x > `+outside+`/theirs.txt"
probe write_etc "echo x > /etc/ampflow-sandbox-probe"
probe worker_proc "test -r /proc/`+strconv.Itoa(os.Getpid())+`/environ"
probe signal_worker "kill -0 `+strconv.Itoa(os.Getpid())+`"
probe worker_env "test -n \"$AMPFLOW_WORKER_SECRET\""
} > ./probes.txt
setsid sh -c 'echo $$ > `+pidFile+`.in; sleep 300' </dev/null >/dev/null 2>&1 &
`+sh(initLine, resultLine))
	t.Setenv("AMPFLOW_WORKER_SECRET", "worker-only")
	if err := os.WriteFile(pidFile+".in", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	probes := func(s Spec) string {
		o := runScript(t, context.Background(), s, nil)
		if !o.Succeeded() {
			t.Fatalf("run: %+v", o)
		}
		raw, err := os.ReadFile(filepath.Join(s.Dir, "probes.txt"))
		if err != nil {
			t.Fatalf("the run wrote no probes in its Dir: %v", err)
		}
		return string(raw)
	}
	// Unconfined, the probes reach what the sandbox must keep out.
	if raw := probes(s); !strings.Contains(raw, "read_secret=yes") || !strings.Contains(raw, "read_key_file=yes") || !strings.Contains(raw, "worker_proc=yes") {
		t.Fatalf("unsandboxed probes %q: the probes test nothing", raw)
	}
	_ = exec.Command("pkill", "-f", "^sleep 300$").Run()
	if err := os.WriteFile(filepath.Join(outside, "theirs.txt"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Dir = t.TempDir()
	s.Sandbox = &Sandbox{Hide: []string{data, keyFile, keyFile + "-missing"}, Read: []string{hookFile}, Write: []string{home, parks, pidFile + ".in"}}
	raw := probes(s)
	want := map[string]string{
		"read_secret": "no", "read_key_file": "no", "read_hook": "yes", "write_hook": "no", "write_dir": "yes", "write_home": "yes",
		"write_park": "yes", "write_outside": "no", "write_etc": "no", "worker_proc": "no", "signal_worker": "no", "worker_env": "no",
	}
	got := map[string]string{}
	for _, line := range strings.Fields(raw) {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "theirs.txt")); string(b) != "theirs" {
		t.Errorf("a file outside the sandbox changed: %q", b)
	}
	// The detached process saw its own pid namespace; whatever it was, no
	// sleep 300 is left on the machine once the namespace is torn down
	// (the kernel kills its processes as its init exits, which a loaded
	// machine may take a moment to finish).
	for deadline := time.Now().Add(5 * time.Second); running("sleep 300"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Error("a detached process outlived the sandboxed run")
			break
		}
	}
}

// TestSandboxDiesWithWorker: a sandboxed run's processes, detached ones
// included, are gone within 2 s of a kill -9 of the process that started
// it.
// Without the sandbox the detached process outlives the worker, so the
// test sees what it checks.
func TestSandboxDiesWithWorker(t *testing.T) {
	needSandbox(t)
	if mode := os.Getenv("AMPFLOW_SANDBOX_CHILD"); mode != "" {
		s := scriptSpec(t, `setsid sh -c 'exec sleep 301' </dev/null >/dev/null 2>&1 & exec sleep 302`)
		s.Dir = os.Getenv("AMPFLOW_SANDBOX_DIR")
		s.IdleTimeout, s.FirstEventTimeout = time.Minute, time.Minute
		if mode == "on" {
			s.Sandbox = &Sandbox{}
		}
		_, _ = Run(context.Background(), s, nil)
		return
	}
	t.Run("Unsandboxed", func(t *testing.T) {
		killWorker(t, "off")
		if !running("sleep 301") {
			t.Fatal("without the sandbox, the detached process died with the worker: the test checks nothing")
		}
		_ = exec.Command("pkill", "-f", "^sleep 30[12]$").Run()
	})
	t.Run("Sandboxed", func(t *testing.T) {
		killWorker(t, "on")
		gone := time.Now().Add(2 * time.Second)
		for running("sleep 301") || running("sleep 302") {
			if time.Now().After(gone) {
				_ = exec.Command("pkill", "-f", "^sleep 30[12]$").Run()
				t.Fatal("a sandboxed run's processes outlived a kill -9 of the worker by 2 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// killWorker starts this test binary as a worker running a run (sandbox
// on or off) that starts a detached process, waits for both, and kills
// the worker with SIGKILL.
func killWorker(t *testing.T, sandbox string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSandboxDiesWithWorker$")
	cmd.Env = append(os.Environ(), "AMPFLOW_SANDBOX_CHILD="+sandbox, "AMPFLOW_SANDBOX_DIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !running("sleep 301") || !running("sleep 302") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the sandboxed run did not start its processes within 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// running says whether a process whose whole command line is s is alive.
func running(s string) bool {
	out, _ := exec.Command("pgrep", "-f", "^"+s+"$").Output()
	return len(strings.TrimSpace(string(out))) > 0
}

func TestSandboxRefusesShowingHidden(t *testing.T) {
	b := &Sandbox{Hide: []string{"/srv/data"}, Write: []string{"/srv"}}
	if _, err := b.wrap("/srv/data/worktrees/T-1", []string{"claude"}); err == nil || !strings.Contains(err.Error(), "would show /srv/data") {
		t.Errorf("wrap with a Write that holds Hide = %v, want a refusal", err)
	}
	// A path to read that is hidden, or holds what is (the worker's
	// TMPDIR, /tmp), is left out: it would show what the sandbox hides.
	b = &Sandbox{Hide: []string{"/srv/data"}, Read: []string{"/srv/data", "/srv", "/tmp"}}
	if argv, err := b.wrap("/work", []string{"claude"}); err != nil || strings.Contains(strings.Join(argv, " "), "--ro-bind-try") {
		t.Errorf("wrap with Reads that hold hidden directories = %q, %v; want them left out", argv, err)
	}
	if _, err := (&Sandbox{Write: []string{"/tmp"}}).wrap("/work", []string{"claude"}); err == nil {
		t.Error("wrap with /tmp to write: no refusal")
	}
	b = &Sandbox{Hide: []string{"/srv/data"}, Read: []string{"/usr/bin/git", "/srv/data/hooks/h.json"}}
	argv, err := b.wrap("/work", []string{"claude"})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(argv, " ")
	if strings.Contains(line, "/usr/bin/git") || !strings.Contains(line, "--ro-bind-try /srv/data/hooks/h.json") || !strings.HasSuffix(line, "--chdir /work -- claude") {
		t.Errorf("argv %q", line)
	}
}

// TestSandboxHasNoCapabilities: nothing inside the sandbox holds a
// capability, even when the worker is root, so nothing can unmount what
// hides a directory or make / writable.
func TestSandboxHasNoCapabilities(t *testing.T) {
	needSandbox(t)
	hidden := t.TempDir()
	if err := os.WriteFile(filepath.Join(hidden, "key"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := scriptSpec(t, `{ grep CapEff /proc/self/status; umount `+hidden+` 2>&1 && echo umount=yes || echo umount=no; `+
		`cat `+hidden+`/key 2>/dev/null && echo key=yes || echo key=no; `+
		`mount -o remount,rw,bind / 2>&1 && echo remount=yes || echo remount=no; } > probes.txt
`+sh(initLine, resultLine))
	s.Sandbox = &Sandbox{Hide: []string{hidden}}
	o := runScript(t, context.Background(), s, nil)
	if !o.Succeeded() {
		t.Fatalf("run: %+v", o)
	}
	raw, err := os.ReadFile(filepath.Join(s.Dir, "probes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := string(raw)
	if !strings.Contains(out, "CapEff:\t0000000000000000") || !strings.Contains(out, "umount=no") ||
		!strings.Contains(out, "key=no") || !strings.Contains(out, "remount=no") {
		t.Errorf("inside the sandbox:\n%s", out)
	}
}

// TestSandboxHidesSessionSockets: a socket in a user's session directory
// (/run/user: the user's bus, systemd, gpg and ssh agents), which a run
// could ask to run commands outside the sandbox, cannot be reached from
// inside; outside, it can.
func TestSandboxHidesSessionSockets(t *testing.T) {
	needSandbox(t)
	dir := filepath.Join("/run/user", "ampflow-test-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("making a session directory under /run/user: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "bus")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	probe := `{ test -S ` + sock + ` && echo sock=yes || echo sock=no; } > probes.txt
` + sh(initLine, resultLine)
	for _, c := range []struct {
		sandbox *Sandbox
		want    string
	}{{nil, "sock=yes"}, {&Sandbox{}, "sock=no"}} {
		s := scriptSpec(t, probe)
		s.Sandbox = c.sandbox
		if o := runScript(t, context.Background(), s, nil); !o.Succeeded() {
			t.Fatalf("run: %+v", o)
		}
		if raw, _ := os.ReadFile(filepath.Join(s.Dir, "probes.txt")); !strings.Contains(string(raw), c.want) {
			t.Errorf("sandbox %v: %q, want %s", c.sandbox != nil, raw, c.want)
		}
	}
}
