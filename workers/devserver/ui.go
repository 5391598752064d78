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
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"

	"github.com/ampflow/ampflow/integrations/httpapi"
)

// uiServer serves the Temporal Web UI, whose compiled assets ui-server
// embeds, so it works offline. It answers only to a loopback Host and
// Origin (httpapi.Guard): it has no sign-in, and reaches the frontend with
// the server's key.
//
// It is assembled from ui-server's routes and middleware rather than run
// through its server.Server, whose Start exits the whole process when the
// port cannot be bound; here the listener is ours, so a busy port is an
// error from Start.
type uiServer struct {
	addr string
	conn *grpc.ClientConn
	http *http.Server
	done chan struct{}
}

func startUI(o Options, frontendAddr string) (*uiServer, error) {
	cfg := &uiconfig.Config{
		TemporalGRPCAddress: frontendAddr,
		Host:                o.IP,
		Port:                o.UIPort,
		EnableUI:            true,
		DefaultNamespace:    o.Namespace,
		DisableWriteActions: !o.UIWrites,
		// Both reach out to the internet.
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		// Plain HTTP on a local port: a Secure cookie would never come back.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
	}
	ln, err := net.Listen("tcp", hostPort(o.IP, o.UIPort))
	if err != nil {
		return nil, fmt.Errorf("listening for web UI: %w", err)
	}
	// ui-server has no setting for an API key, so its gRPC connection is
	// ours: one that presents the key on every call.
	conn, err := dialFrontend(frontendAddr, o.APIKey, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("building web UI: %w", err)
	}
	handler, err := uiHandler(cfg, conn)
	if err != nil {
		ln.Close()
		conn.Close()
		return nil, fmt.Errorf("building web UI: %w", err)
	}
	s := &uiServer{
		addr: hostPort(dialHost(o.IP), o.UIPort),
		conn: conn,
		http: &http.Server{Handler: httpapi.Guard("the Web UI", handler), ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

// uiHandler is ui-server's own set of routes and middleware, its API
// routes served over conn.
func uiHandler(cfg *uiconfig.Config, conn *grpc.ClientConn) (http.Handler, error) {
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
	apiRoutes(e, provider, apiMiddleware, conn)
	route.SetAuthRoutes(e, provider)
	if err := route.SetUIRoutes(e, cfg.PublicPath, assets, provider); err != nil {
		return nil, err
	}
	route.SetRenderRoute(e, "/")
	return e, nil
}

// apiRoutes mounts the routes of ui-server's route.SetAPIRoutes, which
// dials a connection of its own, over conn; writes go through its
// DisableWriteMiddleware.
func apiRoutes(e *echo.Echo, provider *uiconfig.ConfigProviderWithRefresh, mw []api.Middleware, conn *grpc.ClientConn) {
	writes := route.DisableWriteMiddleware(provider)
	g := e.Group("/api/v1")
	g.GET("/settings", api.GetSettings(provider))
	g.GET("/releases", api.GetLatestReleases(provider, api.NewReleaseChecker()))
	g.GET("/ui-extensions", api.GetUIExtensions(provider, api.TemporalAccessCheck(conn, mw)))
	g.GET(api.WorkflowRawHistoryUrl, api.WorkflowRawHistoryHandler(workflowservice.NewWorkflowServiceClient(conn)), writes)
	g.Match([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, "/*", api.TemporalAPIHandler(provider, mw, conn), writes)
}

func (s *uiServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.http.Close()
	}
	<-s.done
	return errors.Join(err, s.conn.Close())
}

type staticUIConfig struct{ cfg *uiconfig.Config }

func (p staticUIConfig) GetConfig() (*uiconfig.Config, error) { return p.cfg, nil }
