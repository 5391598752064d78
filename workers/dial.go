// Package workers wires ampflow together: the Temporal worker with its
// activities, the HTTP API and the chat integrations, for `ampflow dev`
// and `ampflow worker` alike.
package workers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// SearchAttributes are the custom search attributes the task workflow
// upserts; the namespace must have them.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		task.AttrStatus.GetName():      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		task.AttrRisk.GetName():        enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		task.AttrRejectCount.GetName(): enumspb.INDEXED_VALUE_TYPE_INT,
		task.AttrRepo.GetName():        enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// Dial connects to Temporal as configured (address, namespace, TLS, API
// key), failing within timeout with a readable error. An API key without
// temporal.tls goes in plain text to a loopback address (the embedded
// server) or with temporal.plaintext, and over TLS to any other.
func Dial(ctx context.Context, cfg config.Temporal, logger *slog.Logger, metrics client.MetricsHandler, timeout time.Duration) (client.Client, error) {
	opts := client.Options{
		HostPort:       cfg.Address,
		Namespace:      cfg.Namespace,
		Logger:         log.NewStructuredLogger(quiet(logger)),
		MetricsHandler: metrics,
	}
	if cfg.TLS.Enabled {
		tc, err := tlsConfig(cfg.TLS)
		if err != nil {
			return nil, err
		}
		opts.ConnectionOptions.TLS = tc
	}
	if cfg.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.APIKey)
		switch {
		case opts.ConnectionOptions.TLS != nil:
		case httpapi.LoopbackHost(cfg.Address) || cfg.Plaintext:
			// The embedded server's frontend speaks plain text; on
			// loopback the key never leaves the machine.
			opts.ConnectionOptions.TLSDisabled = true
		default:
			// A key goes over the network only inside TLS.
			opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.DialContext(dctx, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %w", cfg.Address, cfg.Namespace, err)
	}
	return c, nil
}

// TemporalKeyFile is the file in data_dir where `ampflow dev` and `ampflow
// temporal` keep the API key their embedded server requires, when
// temporal.api_key is unset.
const TemporalKeyFile = "temporal.key"

// TemporalAPIKey is the embedded server's API key: temporal.api_key, else
// the key kept in data_dir's TemporalKeyFile, made (mode 0600) on first use.
func TemporalAPIKey(cfg config.Config) (string, error) {
	if cfg.Temporal.APIKey != "" {
		return cfg.Temporal.APIKey, nil
	}
	key, err := keptSecret(filepath.Join(cfg.DataDir, TemporalKeyFile), "Temporal API key")
	if err != nil {
		return "", fmt.Errorf("temporal.api_key: %w", err)
	}
	return key, nil
}

// quiet passes the SDK's own logs on at warn and above only.
func quiet(l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return slog.New(levelFloor{h: l.Handler(), min: slog.LevelWarn})
}

// levelFloor passes on what is at least min. The attributes and groups
// added to it are applied to h only when a record is handled: the SDK
// adds fields to its logger for every workflow task and activity it runs,
// a handler formats them as they are added, and nearly none of those
// loggers writes anything at min.
type levelFloor struct {
	h   slog.Handler
	min slog.Level
	ops []func(slog.Handler) slog.Handler // WithAttrs and WithGroup, in order
}

func (f levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.h.Enabled(ctx, l)
}
func (f levelFloor) Handle(ctx context.Context, r slog.Record) error {
	h := f.h
	for _, op := range f.ops {
		h = op(h)
	}
	return h.Handle(ctx, r)
}
func (f levelFloor) WithAttrs(a []slog.Attr) slog.Handler {
	return f.with(func(h slog.Handler) slog.Handler { return h.WithAttrs(a) })
}
func (f levelFloor) WithGroup(n string) slog.Handler {
	return f.with(func(h slog.Handler) slog.Handler { return h.WithGroup(n) })
}
func (f levelFloor) with(op func(slog.Handler) slog.Handler) slog.Handler {
	// A full slice: siblings made from one parent never share an append.
	return levelFloor{h: f.h, min: f.min, ops: append(f.ops[:len(f.ops):len(f.ops)], op)}
}

func tlsConfig(c config.TemporalTLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls.cert_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("temporal.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal.tls.ca_file: no certificate in %s", c.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}
