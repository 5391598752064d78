package devserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/temporalio/ui-server/v2/server/api"
	"github.com/temporalio/ui-server/v2/server/auth"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/cors"
	"github.com/temporalio/ui-server/v2/server/csrf"
	"github.com/temporalio/ui-server/v2/server/headers"
	"github.com/temporalio/ui-server/v2/server/route"
	"github.com/temporalio/ui-server/v2/ui"
)

// uiServer serves the Temporal Web UI, whose compiled assets ui-server
// embeds, so it works offline.
//
// It is assembled from ui-server's routes and middleware rather than run
// through its server.Server, whose Start exits the whole process when the
// port cannot be bound; here the listener is ours, so a busy port is an
// error from Start.
type uiServer struct {
	addr string
	http *http.Server
	done chan struct{}
}

func startUI(ip string, port int, frontendAddr, namespace string) (*uiServer, error) {
	cfg := &uiconfig.Config{
		TemporalGRPCAddress: frontendAddr,
		Host:                ip,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		// Both reach out to the internet.
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		// Plain HTTP on a local port: a Secure cookie would never come back.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
	}
	ln, err := net.Listen("tcp", hostPort(ip, port))
	if err != nil {
		return nil, fmt.Errorf("listening for web UI: %w", err)
	}
	handler, err := uiHandler(cfg)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("building web UI: %w", err)
	}
	s := &uiServer{
		addr: hostPort(dialHost(ip), port),
		http: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

func uiHandler(cfg *uiconfig.Config) (http.Handler, error) {
	provider, err := uiconfig.NewConfigProviderWithRefresh(staticUIConfig{cfg})
	if err != nil {
		return nil, err
	}
	assets, err := ui.Assets()
	if err != nil {
		return nil, err
	}
	if assets, err = fs.Sub(assets, "local"); err != nil {
		return nil, err
	}
	secureCookie := !cfg.CORS.CookieInsecure
	apiMiddleware := []api.Middleware{
		headers.WithForwardHeaders([]string{auth.AuthorizationExtrasHeader, "Caller-Type"}),
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.Recover(), middleware.Gzip())
	e.Use(cors.CORSMiddleware(cors.CORSConfig{
		AllowHeaders: []string{
			echo.HeaderOrigin, echo.HeaderContentType, echo.HeaderAccept,
			echo.HeaderXCSRFToken, echo.HeaderAuthorization, auth.AuthorizationExtrasHeader,
			"Caller-Type",
		},
		AllowCredentials: true,
		ConfigProvider:   provider,
	}))
	e.Use(middleware.Secure())
	e.Use(csrf.EnsureTokenCookie(secureCookie))
	e.Use(middleware.CSRFWithConfig(csrf.MiddlewareConfig(provider, secureCookie)))
	e.Pre(route.PublicPath(cfg.PublicPath))
	route.SetHealthRoute(e)
	if err := route.SetAPIRoutes(e, provider, apiMiddleware); err != nil {
		return nil, err
	}
	route.SetAuthRoutes(e, provider)
	if err := route.SetUIRoutes(e, cfg.PublicPath, assets, provider); err != nil {
		return nil, err
	}
	route.SetRenderRoute(e, "/")
	return e, nil
}

func (s *uiServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.http.Close()
	}
	<-s.done
	return err
}

type staticUIConfig struct{ cfg *uiconfig.Config }

func (p staticUIConfig) GetConfig() (*uiconfig.Config, error) { return p.cfg, nil }
