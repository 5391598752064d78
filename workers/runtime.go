package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ampflow/ampflow/integrations/httpapi"
)

// runtime holds what serves beside the worker: the HTTP API and the chat
// transport loops.
type runtime struct {
	log   *slog.Logger
	http  *http.Server
	ln    net.Listener
	loops []func(context.Context) error
}

func newRuntime(ctx context.Context, o Options, parts *Parts, log *slog.Logger) (*runtime, error) {
	rt := &runtime{log: log}
	addr := o.Config.HTTP.Addr
	if addr == "" {
		return rt, nil
	}
	api := httpapi.New(httpapi.Options{
		Tasks: parts.Tasks, Store: parts.Store, Tokens: o.Config.Auth.Tokens, Logger: log, Metrics: o.Metrics,
	})
	if err := api.LoopbackOnly(addr); err != nil {
		return nil, fmt.Errorf("http.addr: %w", err)
	}
	if err := mountChat(ctx, o, parts, api, rt); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http.addr %s: %w", addr, err)
	}
	rt.ln = ln
	rt.http = &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	api.LogStart(ln.Addr().String())
	if o.Endpoint != nil {
		note := ""
		if len(o.Config.Auth.Tokens) == 0 {
			note = " (no auth.tokens: open, loopback only)"
		}
		o.Endpoint("http api", "http://"+ln.Addr().String()+note)
	}
	return rt, nil
}

// serve starts the HTTP server and the loops; the first failure is sent.
func (rt *runtime) serve(ctx context.Context) <-chan error {
	errc := make(chan error, 1+len(rt.loops))
	if rt.http != nil {
		go func() {
			if err := rt.http.Serve(rt.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("http api: %w", err)
			}
		}()
	}
	for _, loop := range rt.loops {
		go func() {
			if err := loop(ctx); err != nil && ctx.Err() == nil {
				errc <- err
			}
		}()
	}
	return errc
}

func (rt *runtime) stop() {
	if rt.http == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	if err := rt.http.Shutdown(ctx); err != nil {
		rt.log.Warn("stopping the http api", "error", err)
	}
}

// mountChat starts nothing yet: the chat integrations are wired here.
func mountChat(ctx context.Context, o Options, parts *Parts, api *httpapi.Server, rt *runtime) error {
	return nil
}
