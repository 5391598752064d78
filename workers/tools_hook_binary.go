package workers

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ampflow/ampflow/config"
)

// hookBinaryName is the small hook executable (cmd/ampflow-hook).
const hookBinaryName = "ampflow-hook"

// hookBinary finds the ampflow-hook that Codex and Gemini CLI runners run:
// tools.hook_binary, else the one beside self (the ampflow executable),
// else one on PATH. Under `go run`, which leaves none beside its
// executable, it builds one into data_dir/bin from the module's source,
// when go is on PATH. Empty: the runners run `ampflow hook`, and the log
// says which setting would spare them its start-up.
func hookBinary(cfg config.Config, self string, log *slog.Logger) string {
	if cfg.Tools.HookBinary != "" {
		return cfg.Tools.HookBinary
	}
	if p := filepath.Join(filepath.Dir(self), hookBinaryName); isExecutable(p) {
		return p
	}
	if p, err := exec.LookPath(hookBinaryName); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	if p := buildHookBinary(cfg.DataDir, log); p != "" {
		return p
	}
	log.Warn("Codex and Gemini CLI runners run `ampflow hook`, some 60ms a tool call: no "+hookBinaryName+
		" beside the ampflow executable or on PATH; build it (go build ./cmd/ampflow-hook) and set tools.hook_binary", "ampflow", self)
	return ""
}

// buildHookBinary builds ampflow-hook into dataDir/bin from the module the
// working directory is in, if it is ampflow's and go is on PATH: `go run
// ./cmd/ampflow dev` then gets the small hook too.
func buildHookBinary(dataDir string, log *slog.Logger) string {
	goBin, err := exec.LookPath("go")
	if dataDir == "" || err != nil {
		return ""
	}
	root := moduleSource()
	if root == "" {
		return ""
	}
	out, err := filepath.Abs(filepath.Join(dataDir, "bin", hookBinaryName))
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "./cmd/"+hookBinaryName)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		log.Warn("building "+hookBinaryName+" into data_dir failed", "error", err, "output", strings.TrimSpace(string(b)))
		return ""
	}
	log.Info("built "+hookBinaryName+" for the runners' tool hook", "path", out)
	return out
}

// moduleSource is the root of ampflow's source above the working
// directory, with the hook's command in it; empty when there is none.
func moduleSource() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			if strings.HasPrefix(string(mod), "module github.com/ampflow/ampflow\n") && isFile(filepath.Join(dir, "cmd", hookBinaryName, "main.go")) {
				return dir
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
