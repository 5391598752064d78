// Package cli is the ampflow command line. Main runs it with injected
// arguments, IO and environment, so tests drive it in-process; the binary
// in cmd/ampflow only wires it to the process.
//
// This package must not import the Temporal server: commands that need it
// (such as dev) are built in main and added through Options.Extra.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows"
)

// Exit codes of Main.
const (
	ExitOK     = 0 // the command did what was asked
	ExitFailed = 1 // refused or failed: an invalid message, an unreachable server
	ExitUsage  = 2 // the command line was wrong, or its input unreadable
)

// Output formats accepted by --output.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// Options are everything Main takes from the process. Nil streams read as
// empty and discard; a nil LookupEnv is an empty environment.
type Options struct {
	Args      []string // without the program name
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	LookupEnv func(key string) (string, bool)
	// Extra builds more top-level commands, such as dev, which links the
	// Temporal server and so lives outside this package.
	Extra []func(*App) *cobra.Command
	// Tasks reaches the task workflows; nil is the HTTP API at api.url
	// (with api.token). Tests pass a fake.
	Tasks func() (workflows.Tasks, error)
	// PollInterval spaces the State and Inbox polls of the waiting
	// commands; zero means 500ms.
	PollInterval time.Duration
	// StartCheckWait bounds how long task start waits for the branch
	// check; zero means 10s.
	StartCheckWait time.Duration
	// Now is the clock for new msg_ids and years; nil is time.Now.
	Now func() time.Time
}

// App is what every command shares: IO, environment, the one viper
// instance its flags are bound to, and the global flags.
type App struct {
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	LookupEnv func(key string) (string, bool)
	// Viper holds the configuration defaults; commands bind flags to it
	// with BindPFlag before Config loads it.
	Viper *viper.Viper
	// Tasks creates the way in to the task workflows; see Options.Tasks.
	// Commands call it through App.tasks, which creates it once.
	Tasks func() (workflows.Tasks, error)
	// Now is the clock commands read.
	Now func() time.Time

	configFile     string
	output         string
	cfg            *config.Config
	pollInterval   time.Duration
	startCheckWait time.Duration
	conn           workflows.Tasks
}

// ExitError ends Main with Code. Main prints Err, if any, to stderr on one
// line, followed by the command's usage when ShowUsage is set.
type ExitError struct {
	Code      int
	Err       error
	ShowUsage bool
}

// Error implements error.
func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *ExitError) Unwrap() error { return e.Err }

// UsageError reports a wrong command line: exit 2, with the usage.
func UsageError(err error) error {
	return &ExitError{Code: ExitUsage, Err: err, ShowUsage: true}
}

// Exit ends Main with code after printing err, if any.
func Exit(code int, err error) error {
	return &ExitError{Code: code, Err: err}
}

// Main runs the command line in o.Args and returns the process's exit code.
func Main(ctx context.Context, o Options) int {
	a := newApp(o)
	root := a.rootCommand()
	for _, extra := range o.Extra {
		root.AddCommand(extra(a))
	}
	args := o.Args
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	a.closeTasks()
	if err == nil {
		return ExitOK
	}
	if !a.JSON() && jsonAsked(args) {
		// The flags were refused before -o was read: answer in the form
		// asked for all the same.
		a.output = OutputJSON
	}
	return a.report(cmd, err)
}

// jsonAsked reports whether args ask for JSON output (-o json, -ojson,
// -o=json, --output json, --output=json) before a "--".
func jsonAsked(args []string) bool {
	for i, arg := range args {
		switch arg {
		case "--":
			return false
		case "-o", "--output":
			if i+1 < len(args) && args[i+1] == OutputJSON {
				return true
			}
		case "-ojson", "-o=json", "--output=json":
			return true
		}
	}
	return false
}

func newApp(o Options) *App {
	a := &App{
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, LookupEnv: o.LookupEnv,
		Viper: config.New(), Tasks: o.Tasks, Now: o.Now,
		pollInterval: o.PollInterval, startCheckWait: o.StartCheckWait,
	}
	if a.Tasks == nil {
		a.Tasks = a.apiTasks
	}
	if a.Now == nil {
		a.Now = time.Now
	}
	if a.pollInterval <= 0 {
		a.pollInterval = 500 * time.Millisecond
	}
	if a.startCheckWait <= 0 {
		a.startCheckWait = 10 * time.Second
	}
	if a.Stdin == nil {
		a.Stdin = strings.NewReader("")
	}
	if a.Stdout == nil {
		a.Stdout = io.Discard
	}
	if a.Stderr == nil {
		a.Stderr = io.Discard
	}
	if a.LookupEnv == nil {
		a.LookupEnv = func(string) (string, bool) { return "", false }
	}
	return a
}

func (a *App) report(cmd *cobra.Command, err error) int {
	code, showUsage := ExitFailed, false
	var ee *ExitError
	if errors.As(err, &ee) {
		code, showUsage = ee.Code, ee.ShowUsage
		err = ee.Err
	}
	if err != nil {
		a.writeError(a.Stderr, code, err)
	}
	if showUsage && cmd != nil && !a.JSON() {
		fmt.Fprint(a.Stderr, cmd.UsageString())
	}
	return code
}

func (a *App) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ampflow",
		Short: "Durable orchestration of AI coding agents that speak AMP/1.0",
		Long: "ampflow carries AMP/1.0 messages between a coordinator, an executor and a\n" +
			"reviewer, keeps every task's state in Temporal, and asks an admin when needed.\n" +
			"Every command but dev, worker, bench, audit and ssot is a client of the HTTP\n" +
			"API at api.url (AMPFLOW_API_URL), presenting api.token (AMPFLOW_API_TOKEN);\n" +
			"audit and ssot open the SSOT store (ssot.url) themselves.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return UsageError(errors.New("missing command"))
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return UsageError(errors.New(msg))
		},
		// Runnable so that cobra consults Args above rather than printing
		// help and exiting 0; Args always refuses, so RunE never runs.
		RunE:              func(*cobra.Command, []string) error { return nil },
		PersistentPreRunE: a.checkGlobalFlags,
		SilenceErrors:     true,
		SilenceUsage:      true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SuggestionsMinimumDistance = 2
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })

	pf := root.PersistentFlags()
	pf.StringVar(&a.configFile, "config", "", "read configuration from `FILE` (default ./ampflow.yaml if present)")
	pf.StringVarP(&a.output, "output", "o", OutputText, "output `format`: text or json")
	pf.String("log-level", "", "log `level`: debug, info, warn or error (overrides log.level)")
	// The flag exists; binding cannot fail.
	_ = a.Viper.BindPFlag("log.level", pf.Lookup("log-level"))

	root.AddCommand(a.validateCommand(), a.schemaCommand(), a.versionCommand())
	root.AddGroup(
		&cobra.Group{ID: groupCoordinator, Title: "Coordinator commands:"},
		&cobra.Group{ID: groupAgent, Title: "Agent commands:"},
		&cobra.Group{ID: groupAdmin, Title: "Admin commands:"},
		&cobra.Group{ID: groupOperator, Title: "Operator commands (on the SSOT store itself):"},
	)
	root.AddCommand(a.taskCommand(), a.msgCommand())
	root.AddCommand(a.agentCommands()...)
	root.AddCommand(a.pendingCommand(), a.decideCommand())
	root.AddCommand(a.gatesCommand())
	root.AddCommand(a.contractsCommand())
	root.AddCommand(a.auditCommand(), a.ssotCommand())
	root.AddCommand(a.aofCommand())
	root.AddCommand(a.leaseCommand(), a.chatCommand())
	root.AddCommand(a.fleetCommand())
	root.AddCommand(a.goalCommand())
	root.AddCommand(a.hookCommand())
	return root
}

func (a *App) checkGlobalFlags(cmd *cobra.Command, _ []string) error {
	if a.output != OutputText && a.output != OutputJSON {
		return UsageError(fmt.Errorf("invalid --output %q: must be text or json", a.output))
	}
	if f := cmd.Flags().Lookup("log-level"); f != nil && f.Changed {
		if lvl := f.Value.String(); !slices.Contains([]string{"debug", "info", "warn", "error"}, lvl) {
			return UsageError(fmt.Errorf("invalid --log-level %q: must be debug, info, warn or error", lvl))
		}
	}
	return nil
}

// exactArgs requires n positional arguments, described by what.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return UsageError(fmt.Errorf("%s takes %d argument (%s), got %d", cmd.Name(), n, what, len(args)))
		}
		return nil
	}
}

// JSON reports whether --output is json.
func (a *App) JSON() bool { return a.output == OutputJSON }

// PrintJSON writes v to stdout as one line of JSON.
func (a *App) PrintJSON(v any) error {
	enc := json.NewEncoder(a.Stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Config loads the configuration once (defaults, --config or
// ./ampflow.yaml, AMPFLOW_* from LookupEnv, bound flags) and validates it.
func (a *App) Config() (config.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	c, err := config.LoadEnv(a.Viper, a.configFile, a.LookupEnv)
	if err != nil {
		return config.Config{}, err
	}
	if err := c.Validate(); err != nil {
		return config.Config{}, err
	}
	a.cfg = &c
	return c, nil
}

// Logger returns a logger to stderr at the configured level and format.
// Durations read as 5m or 300ms, not nanoseconds (JSON) or 5m0s (text).
func (a *App) Logger(c config.Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.Log.SlogLevel(), ReplaceAttr: readableDuration}
	if c.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(a.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(a.Stderr, opts))
}

// maxArgs refuses more than n arguments; what says what they are.
func maxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return UsageError(fmt.Errorf("%s takes at most %d argument (%s), got %d", cmd.Name(), n, what, len(args)))
		}
		return nil
	}
}
