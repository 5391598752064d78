// Package devserver runs a Temporal server inside the ampflow process, on
// SQLite or PostgreSQL, with the optional Temporal Web UI: the engine behind
// `ampflow dev` and `ampflow temporal`.
//
// Apart from the end-to-end tests, this is the only package in ampflow that
// imports go.temporal.io/server.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/temporal"
	"google.golang.org/grpc"
)

const (
	// DefaultPort is the customary Temporal frontend port. Options.Port
	// zero picks a free port instead, so callers that want the customary
	// one pass this.
	DefaultPort = 7233
	// DefaultNamespace is the namespace used when Options.Namespace is empty.
	DefaultNamespace = "default"
	// DefaultRetention is how long closed workflows are kept when
	// Options.Retention is zero.
	DefaultRetention = 7 * 24 * time.Hour
	// MaxStartWait bounds Start even when its context has no deadline.
	MaxStartWait = 2 * time.Minute
)

// Options configure Start.
type Options struct {
	// DataDir holds temporal.db (SQLite) and temporal.version; it is created
	// if missing. Required unless Postgres is set, and then unused.
	DataDir string
	// Postgres, when set, keeps Temporal's state on a PostgreSQL server
	// instead of SQLite: postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=disable
	// names the main database, and visibility lives in DB_visibility (see
	// VisibilitySuffix). Both are created when missing, and their schemas
	// set up or brought up to date, at start. One server per database.
	Postgres string
	// IP is the address the frontend (gRPC and HTTP) binds; the default is
	// 127.0.0.1. The other services always bind the loopback.
	IP string
	// Port is the frontend gRPC port; zero picks a free one.
	Port int
	// APIKey is the credential the frontend requires of every caller, as
	// gRPC metadata `authorization: Bearer <APIKey>` (the SDK's
	// client.NewAPIKeyStaticCredentials); a caller without it may call
	// only the health checks. Empty makes a random key for this run, which
	// Server.APIKey returns.
	APIKey string
	// UIPort is the Temporal Web UI port on IP; zero leaves the UI off.
	// The UI answers only to a loopback Host and Origin, and presents
	// APIKey to the frontend itself.
	UIPort int
	// UIWrites lets the Web UI change workflows (signal, cancel,
	// terminate, reset, start, batch actions); by default it only reads.
	UIWrites bool
	// Namespace is created if absent; the default is DefaultNamespace.
	Namespace string
	// Retention applies when the namespace is created; the default is
	// DefaultRetention.
	Retention time.Duration
	// SearchAttributes are custom search attributes of Namespace: set when
	// the namespace is created and added, if missing, on every start.
	SearchAttributes map[string]enums.IndexedValueType
	// Logger receives the server's logs; the default is slog.Default().
	Logger *slog.Logger
	// LogLevel is the least severe server log passed to Logger; the
	// default is slog.LevelWarn.
	LogLevel slog.Leveler
}

func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" && o.Postgres == "" {
		return o, errors.New("starting dev server: Options.DataDir and Options.Postgres are both empty")
	}
	if o.Port < 0 || o.Port > 65535 || o.UIPort < 0 || o.UIPort > 65535 {
		return o, fmt.Errorf("starting dev server: ports %d and %d: out of range", o.Port, o.UIPort)
	}
	if o.IP == "" {
		o.IP = loopback
	}
	if net.ParseIP(o.IP) == nil {
		return o, fmt.Errorf("starting dev server: IP %q is not an IP address", o.IP)
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.LogLevel == nil {
		o.LogLevel = slog.LevelWarn
	}
	if o.APIKey == "" {
		key, err := newAPIKey()
		if err != nil {
			return o, fmt.Errorf("starting dev server: %w", err)
		}
		o.APIKey = key
	}
	return o, nil
}

// Server is a running dev server. Stop it when done.
type Server struct {
	temporal     temporal.Server
	conn         *grpc.ClientConn
	ui           *uiServer
	frontendAddr string
	httpAddr     string
	apiKey       string
	stopping     *atomic.Bool
	unlock       func() error

	stopOnce sync.Once
	stopErr  error
}

// Start starts a server on o.DataDir and returns once its frontend answers
// for o.Namespace, the search attributes are in place and the UI (if any)
// listens. It fails if ctx ends first, or after MaxStartWait in any case,
// and releases everything it took when it fails.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, MaxStartWait)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting dev server: %w", err)
	}
	p, err := pickPorts(o.IP, o.Port)
	if err != nil {
		return nil, fmt.Errorf("starting dev server: %w", err)
	}
	s := &Server{
		frontendAddr: hostPort(dialHost(o.IP), p.frontend),
		httpAddr:     hostPort(dialHost(o.IP), p.frontendHTTP),
		apiKey:       o.APIKey,
		stopping:     new(atomic.Bool),
	}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	logger := newServerLogger(o.Logger, o.LogLevel, s.stopping)
	var store config.Persistence
	if o.Postgres == "" {
		if s.unlock, err = lockDataDir(o.DataDir); err != nil {
			return nil, fmt.Errorf("starting dev server: %w", err)
		}
		sql, err := prepareStore(o.DataDir, clusterName, o.Namespace, o.Retention, o.SearchAttributes)
		if err != nil {
			return nil, fmt.Errorf("starting dev server: %w", err)
		}
		store = sqlitePersistence(sql)
	} else {
		pg, err := preparePostgres(ctx, o.Postgres, logger)
		if err != nil {
			return nil, fmt.Errorf("starting dev server: %w", err)
		}
		store = postgresPersistence(pg)
	}
	opts, err := serverOptions(serverConfig(o, p, store), p, o, logger)
	if err != nil {
		return nil, fmt.Errorf("starting dev server: %w", err)
	}
	if s.temporal, err = newTemporal(opts); err != nil {
		s.temporal = nil
		return nil, fmt.Errorf("starting dev server: %w", err)
	}
	if err := startTemporal(ctx, s.temporal); err != nil {
		return nil, fmt.Errorf("starting dev server on %s: %w", s.frontendAddr, err)
	}
	if s.conn, err = dialFrontend(s.frontendAddr, o.APIKey); err != nil {
		return nil, fmt.Errorf("starting dev server: %w", err)
	}
	if o.Postgres != "" {
		// On SQLite prepareStore wrote the namespace into the database;
		// on PostgreSQL the frontend registers it.
		if err := registerNamespace(ctx, s.conn, o.Namespace, o.Retention); err != nil {
			return nil, fmt.Errorf("starting dev server: %w", err)
		}
	}
	if err := waitForNamespace(ctx, s.conn, o.Namespace); err != nil {
		return nil, fmt.Errorf("starting dev server: waiting for %s to serve namespace %s: %w", s.frontendAddr, o.Namespace, err)
	}
	if err := ensureSearchAttributes(ctx, s.conn, o.Namespace, o.SearchAttributes); err != nil {
		return nil, fmt.Errorf("starting dev server: %w", err)
	}
	if o.UIPort != 0 {
		if s.ui, err = startUI(o, s.frontendAddr); err != nil {
			return nil, fmt.Errorf("starting dev server: %w", err)
		}
	}
	return s, nil
}

// newTemporal builds the server, turning a panic of the server's logger
// (see serverLogger.Fatal) into an error.
func newTemporal(opts []temporal.ServerOption) (srv temporal.Server, err error) {
	defer recoverFatal(&err)
	return temporal.NewServer(opts...)
}

// startTemporal runs srv.Start, which takes no context, and reports ctx's
// error if ctx ends first, though only once srv.Start has returned: stopping
// a server that is still starting races with its start hooks.
func startTemporal(ctx context.Context, srv temporal.Server) error {
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer recoverFatal(&err)
		err = srv.Start()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		<-done
		return ctx.Err()
	}
}

func recoverFatal(err *error) {
	switch r := recover().(type) {
	case nil:
	case fatalError:
		*err = r
	default:
		panic(r)
	}
}

// FrontendAddr is the host:port of the frontend gRPC service, for client.Dial.
func (s *Server) FrontendAddr() string { return s.frontendAddr }

// FrontendHTTPAddr is the host:port of the frontend HTTP API.
func (s *Server) FrontendHTTPAddr() string { return s.httpAddr }

// APIKey is the key the frontend requires: Options.APIKey, or the one made
// for this run.
func (s *Server) APIKey() string { return s.apiKey }

// UIAddr is the host:port of the Web UI, or "" when it is off.
func (s *Server) UIAddr() string {
	if s.ui == nil {
		return ""
	}
	return s.ui.addr
}

// Stop stops the UI and the server, closes the database and unlocks the
// data directory. It takes about a second: the frontend drains requests
// that long. Calling it again returns the first result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		var errs []error
		if s.ui != nil {
			errs = append(errs, s.ui.stop())
		}
		if s.conn != nil {
			errs = append(errs, s.conn.Close())
		}
		if s.temporal != nil {
			errs = append(errs, stopTemporal(s.temporal))
		}
		if s.unlock != nil {
			errs = append(errs, s.unlock())
		}
		if err := errors.Join(errs...); err != nil {
			s.stopErr = fmt.Errorf("stopping dev server on %s: %w", s.frontendAddr, err)
		}
	})
	return s.stopErr
}

func stopTemporal(srv temporal.Server) (err error) {
	defer recoverFatal(&err)
	return srv.Stop()
}
