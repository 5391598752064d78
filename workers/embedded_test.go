package workers

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/workers/devserver"
)

// embeddedTemporal starts an embedded Temporal server with ampflow's
// search attributes, stopped when the test ends, and dials it.
func embeddedTemporal(t *testing.T, ctx context.Context) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: t.TempDir(), Logger: quiet, SearchAttributes: SearchAttributes()})
	if err != nil {
		t.Fatalf("starting Temporal: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: devserver.DefaultNamespace,
		Credentials: client.NewAPIKeyStaticCredentials(srv.APIKey()), Logger: sdklog.NewStructuredLogger(quiet),
		ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// workflowWorker runs wf, registered under name, on queue until the test ends.
func workflowWorker(t *testing.T, c client.Client, queue, name string, wf any) {
	t.Helper()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: name})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}
