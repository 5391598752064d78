package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/task"
)

// dialTimeout bounds the first contact with Temporal, so that a command
// run without a server fails quickly and says why.
const dialTimeout = 5 * time.Second

// Command groups of the root help.
const (
	groupCoordinator = "coordinator"
	groupAgent       = "agent"
	groupAdmin       = "admin"
)

// tasks returns the way in to the task workflows, creating it once.
func (a *App) tasks() (workflows.Tasks, error) {
	if a.conn != nil {
		return a.conn, nil
	}
	t, err := a.Tasks()
	if err != nil {
		return nil, err
	}
	a.conn = t
	return t, nil
}

// closeTasks closes the Temporal connection, if one was dialled.
func (a *App) closeTasks() {
	if c, ok := a.conn.(interface{ Close() }); ok {
		c.Close()
	}
	a.conn = nil
}

// dialedTasks is a *workflows.Client that owns its connection.
type dialedTasks struct {
	*workflows.Client
}

// Close closes the Temporal connection.
func (d dialedTasks) Close() { d.Temporal.Close() }

// dialTasks connects to the configured Temporal service.
func (a *App) dialTasks() (workflows.Tasks, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	opts, err := clientOptions(cfg, a.Logger(cfg))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s: is 'ampflow dev' running? (%s)", cfg.Temporal.Address, dialCause(err))
	}
	return dialedTasks{&workflows.Client{
		Temporal:  c,
		TaskQueue: cfg.Temporal.TaskQueue,
	}}, nil
}

// dialCause digs the useful part out of gRPC's dial error.
func dialCause(err error) string {
	msg := err.Error()
	if _, desc, ok := strings.Cut(msg, `desc = "`); ok {
		msg = strings.TrimSuffix(desc, `"`)
	}
	return strings.TrimPrefix(msg, "transport: Error while dialing: ")
}

// clientOptions turns the temporal.* keys into SDK options.
func clientOptions(cfg config.Config, log *slog.Logger) (client.Options, error) {
	t := cfg.Temporal
	opts := client.Options{
		HostPort:  t.Address,
		Namespace: t.Namespace,
		// The SDK's info lines would drown a command's output.
		Logger: sdklog.NewStructuredLogger(slog.New(levelAtLeast{log.Handler(), slog.LevelWarn})),
		ConnectionOptions: client.ConnectionOptions{
			GetSystemInfoTimeout: dialTimeout,
		},
	}
	if t.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(t.APIKey)
	}
	if !t.TLS.Enabled && t.TLS.CertFile == "" && t.TLS.CAFile == "" {
		return opts, nil
	}
	tc := &tls.Config{ServerName: t.TLS.ServerName, MinVersion: tls.VersionTLS12}
	if t.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.TLS.CertFile, t.TLS.KeyFile)
		if err != nil {
			return opts, fmt.Errorf("loading temporal.tls.cert_file %s: %w", t.TLS.CertFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if t.TLS.CAFile != "" {
		pem, err := os.ReadFile(t.TLS.CAFile)
		if err != nil {
			return opts, fmt.Errorf("loading temporal.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return opts, fmt.Errorf("loading temporal.tls.ca_file %s: no PEM certificate in it", t.TLS.CAFile)
		}
		tc.RootCAs = pool
	}
	opts.ConnectionOptions.TLS = tc
	return opts, nil
}

// levelAtLeast drops records below min whatever the wrapped handler takes.
type levelAtLeast struct {
	slog.Handler
	min slog.Level
}

func (h levelAtLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h levelAtLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return levelAtLeast{h.Handler.WithAttrs(as), h.min}
}

func (h levelAtLeast) WithGroup(name string) slog.Handler {
	return levelAtLeast{h.Handler.WithGroup(name), h.min}
}

// refused turns a task client's error into exit 1 with its message on one
// line; invalid input lists its fields as "path: problem".
func refused(err error) error {
	var te *task.Error
	if errors.As(err, &te) && te.Code == task.CodeInvalid && len(te.Fields) > 0 && !mentionsFields(te) {
		parts := make([]string, len(te.Fields))
		for i, f := range te.Fields {
			parts[i] = f.Path + ": " + f.Problem
		}
		return Exit(ExitFailed, fmt.Errorf("%s: %s", te.Message, strings.Join(parts, "; ")))
	}
	return Exit(ExitFailed, err)
}

func mentionsFields(te *task.Error) bool {
	for _, f := range te.Fields {
		if !strings.Contains(te.Message, f.Path) {
			return false
		}
	}
	return true
}

// isTerminal reports whether w is a character device, such as a terminal.
// golang.org/x/term is not a direct dependency, and this is all we need.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// currentUser is the name decisions and changes are made in by default:
// the operating-system user, as ampflow dev names its admin, else the
// environment's idea of it.
func (a *App) currentUser() string {
	if a.User != nil {
		if u := a.User(); u != "" {
			return u
		}
	}
	for _, k := range []string{"USER", "USERNAME", "LOGNAME"} {
		if v, ok := a.LookupEnv(k); ok && v != "" {
			return v
		}
	}
	return ""
}

// byFlag resolves a --by flag: its value, else the current user.
func (a *App) byFlag(by string) (string, error) {
	if by != "" {
		return by, nil
	}
	if u := a.currentUser(); u != "" {
		return u, nil
	}
	return "", UsageError(errors.New("--by is required: the operating-system user is unknown"))
}
