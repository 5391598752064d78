package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Machine says what a run measured and on what: the commit of the
// binary and the machine's load before and after, so that figures from
// two runs can be compared, or not.
type Machine struct {
	// Commit is the binary's vcs.revision; under go run or go test, which
	// stamp none, `git rev-parse HEAD` of the source the binary was built
	// from; "unknown" when neither says (a build with -buildvcs=false).
	Commit string `json:"commit"`
	// Dirty is set when the build had uncommitted changes.
	Dirty bool `json:"dirty"`
	CPUs  int  `json:"cpus"`
	// LoadBefore and LoadAfter are /proc/loadavg's 1, 5 and 15 minute
	// averages as the run started and ended; nil where the system has none.
	LoadBefore []float64 `json:"load_before"`
	LoadAfter  []float64 `json:"load_after"`
}

// newMachine reads the commit and the load as a run starts.
func newMachine(ctx context.Context) Machine {
	m := Machine{CPUs: runtime.NumCPU(), LoadBefore: loadAvg()}
	m.Commit, m.Dirty = commit(ctx)
	return m
}

// done reads the load as the run ends.
func (m *Machine) done() { m.LoadAfter = loadAvg() }

// String is the machine in one line of text output.
func (m Machine) String() string {
	c := m.Commit
	if m.Dirty {
		c += " (with uncommitted changes)"
	}
	return fmt.Sprintf("commit %s; %d CPUs; load %s before, %s after", c, m.CPUs, loadText(m.LoadBefore), loadText(m.LoadAfter))
}

func loadText(l []float64) string {
	if len(l) == 0 {
		return "unknown"
	}
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(s, " ")
}

// commit is the build's revision and whether it had uncommitted changes.
func commit(ctx context.Context) (string, bool) {
	exe, _ := os.Executable()
	_, file, _, _ := runtime.Caller(0)
	bi, _ := debug.ReadBuildInfo()
	return commitOf(ctx, bi, exe, filepath.Dir(file))
}

// commitOf is the binary's vcs.revision (and vcs.modified) when bi has
// one. A binary that go run or go test built in its temporary directory
// has none: it is then the HEAD of the source it was built from, src, not
// of the directory it runs in. Any other binary without a revision (built
// with -buildvcs=false) is "unknown": the work tree it runs in may hold
// another commit than the one it was built from.
func commitOf(ctx context.Context, bi *debug.BuildInfo, exe, src string) (string, bool) {
	if bi != nil {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			return rev, dirty
		}
	}
	if !builtByGo(exe) || src == "" || !filepath.IsAbs(src) {
		return "unknown", false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", src, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	dirty := exec.CommandContext(ctx, "git", "-C", src, "diff", "--quiet", "HEAD").Run() != nil
	return strings.TrimSpace(string(out)), dirty
}

// builtByGo says whether exe is a binary go run or go test built and
// runs from its work directory (go-build<N>/b001/...).
func builtByGo(exe string) bool {
	for _, part := range strings.Split(filepath.ToSlash(exe), "/") {
		if strings.HasPrefix(part, "go-build") {
			return true
		}
	}
	return false
}

// loadAvg reads the three load averages of /proc/loadavg.
func loadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	return parseLoadAvg(string(b))
}

func parseLoadAvg(s string) []float64 {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil
		}
		out[i] = x
	}
	return out
}
