package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// TestTemporalSecured drives a real `ampflow dev` with its Web UI on: the
// frontend refuses a client without the key kept in the data directory and
// answers one with it, and the Web UI, which reaches the frontend with the
// key, refuses a foreign Host (DNS rebinding) and answers a loopback one.
func TestTemporalSecured(t *testing.T) {
	uiPort := freePort(t)
	p := startDev(t, t.TempDir(), fmt.Sprintf("AMPFLOW_DEV_UI_PORT=%d", uiPort))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("FrontendRefusesNoKey", func(t *testing.T) {
		c, err := client.Dial(client.Options{HostPort: p.temporal, Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default"})
		var denied *serviceerror.PermissionDenied
		if !errors.As(err, &denied) {
			t.Fatalf("ListWorkflowExecutions without the key: %v (%T), want PermissionDenied", err, err)
		}
	})
	t.Run("FrontendAnswersKey", func(t *testing.T) {
		if _, err := dial(t, p).Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default"}); err != nil {
			t.Fatalf("ListWorkflowExecutions with the key: %v", err)
		}
	})
	for _, tt := range []struct {
		name, host string
		want       int
	}{
		{"UIRefusesForeignHost", "rebind.example:8233", http.StatusMisdirectedRequest},
		{"UIAnswersLoopback", fmt.Sprintf("localhost:%d", uiPort), http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/api/v1/namespaces/default/workflows", uiPort), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("GET with Host %s: %s, want %d", tt.host, resp.Status, tt.want)
			}
		})
	}
}
