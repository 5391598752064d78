package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	handler, err := apiHandler(ctx, o, parts, rt)
	if err != nil {
		return nil, err
	}
	addr := o.Config.HTTP.Addr
	if addr == "" {
		return rt, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http.addr %s: %w", addr, err)
	}
	rt.ln = ln
	rt.http = &http.Server{Handler: handler, ReadHeaderTimeout: 10e9}
	if o.Endpoint != nil {
		o.Endpoint("http api", "http://"+ln.Addr().String())
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

// apiHandler builds the HTTP API with the chat webhooks mounted on it.
func apiHandler(ctx context.Context, o Options, parts *Parts, rt *runtime) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
	})
	return mux, nil
}
