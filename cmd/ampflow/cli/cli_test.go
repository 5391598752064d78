package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

type result struct {
	code           int
	stdout, stderr string
}

// run runs the command line in-process, with stdin and an environment.
func run(t *testing.T, stdin string, env map[string]string, extra []func(*App) *cobra.Command, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), Options{
		Args:   args,
		Stdin:  strings.NewReader(stdin),
		Stdout: &stdout,
		Stderr: &stderr,
		LookupEnv: func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		},
		Extra: extra,
	})
	return result{code, stdout.String(), stderr.String()}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"NoCommand", nil, "ampflow: missing command\n"},
		{"UnknownCommand", []string{"valdate", "x.json"}, `ampflow: unknown command "valdate"; did you mean validate?`},
		{"UnknownFlag", []string{"version", "--verbose"}, "ampflow: unknown flag: --verbose"},
		{"BadOutput", []string{"-o", "yaml", "version"}, `ampflow: invalid --output "yaml": must be text or json`},
		{"BadLogLevel", []string{"--log-level", "loud", "version"}, `ampflow: invalid --log-level "loud"`},
		{"VersionArgs", []string{"version", "extra"}, "ampflow: version takes 0 argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", nil, nil, tt.args...)
			if r.code != ExitUsage {
				t.Errorf("exit %d, want %d", r.code, ExitUsage)
			}
			if !strings.HasPrefix(r.stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want prefix %q", r.stderr, tt.wantStderr)
			}
			if !strings.Contains(r.stderr, "Usage:") {
				t.Errorf("stderr lacks the usage: %q", r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help", "validate"}, {"validate", "-h"}} {
		r := run(t, "", nil, nil, args...)
		if r.code != ExitOK || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want help on stdout", args, r.code, r.stdout, r.stderr)
		}
	}
}

// extraCommand stands in for a command added from main, such as dev.
func extraCommand(run func(a *App) error) func(*App) *cobra.Command {
	return func(a *App) *cobra.Command {
		return &cobra.Command{
			Use:  "probe",
			Args: exactArgs(0, "none"),
			RunE: func(*cobra.Command, []string) error { return run(a) },
		}
	}
}

func TestExtraCommandConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	printConfig := extraCommand(func(a *App) error {
		c, err := a.Config()
		if err != nil {
			return err
		}
		fmt.Fprintln(a.Stdout, c.Temporal.TaskQueue, c.Log.Level)
		return nil
	})
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"Defaults", nil, nil, ExitOK, "ampflow info\n", ""},
		{"Env", nil, map[string]string{"AMPFLOW_TEMPORAL_TASK_QUEUE": "q1", "AMPFLOW_LOG_LEVEL": "warn"}, ExitOK, "q1 warn\n", ""},
		{"FlagOverEnv", []string{"--log-level", "debug"}, map[string]string{"AMPFLOW_LOG_LEVEL": "warn"}, ExitOK, "ampflow debug\n", ""},
		{"Invalid", nil, map[string]string{"AMPFLOW_PROTOCOL_MAX_REJECTS": "0", "AMPFLOW_CI_PROVIDER": "github"}, ExitFailed, "",
			"ampflow: invalid configuration: protocol.max_rejects: must be ≥ 1, not 0; ci.github.token: required when ci.provider is github\n"},
		{"MissingConfigFile", []string{"--config", "nope.yaml"}, nil, ExitFailed, "", "ampflow: reading config file nope.yaml: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.env, []func(*App) *cobra.Command{printConfig}, append([]string{"probe"}, tt.args...)...)
			if r.code != tt.wantCode || r.stdout != tt.wantStdout || !strings.HasPrefix(r.stderr, tt.wantStderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, prefix %q", r.code, r.stdout, r.stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
			if strings.Count(r.stderr, "\n") > 1 || strings.Contains(r.stderr, "Usage:") {
				t.Errorf("a runtime error is not one line without usage: %q", r.stderr)
			}
		})
	}
}

func TestExtraCommandExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantCode   int
		wantStderr string
	}{
		{"OK", nil, ExitOK, ""},
		{"Plain", errors.New("server unreachable\nretry later"), ExitFailed, "ampflow: server unreachable; retry later\n"},
		{"Silent", Exit(ExitFailed, nil), ExitFailed, ""},
		{"Usage", UsageError(errors.New("need --by")), ExitUsage, "ampflow: need --by\nUsage:\n  ampflow probe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := extraCommand(func(*App) error { return tt.err })
			r := run(t, "", nil, []func(*App) *cobra.Command{extra}, "probe")
			if r.code != tt.wantCode || !strings.HasPrefix(r.stderr, tt.wantStderr) || (tt.wantStderr == "" && r.stderr != "") {
				t.Errorf("exit %d, stderr %q; want %d, prefix %q", r.code, r.stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
}
