package devserver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// checkKeyRequired runs TestServer's checks of the frontend's key on s,
// which ran workflowID: without the key, or with another, a list and an
// update are refused, on gRPC and on the frontend's HTTP API; with it the
// list answers.
func checkKeyRequired(ctx context.Context, t *testing.T, s *Server, workflowID string) {
	for name, key := range map[string]string{"NoKey": "", "WrongKey": "not-" + s.APIKey()} {
		t.Run(name, func(t *testing.T) {
			// Dialing calls GetSystemInfo, a health check anyone may call.
			c := dialKey(t, s.FrontendAddr(), DefaultNamespace, key)
			_, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: DefaultNamespace})
			wantDenied(t, "ListWorkflowExecutions", err)
			_, err = c.WorkflowService().UpdateWorkflowExecution(ctx, &workflowservice.UpdateWorkflowExecutionRequest{
				Namespace:         DefaultNamespace,
				WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID},
				Request:           &updatepb.Request{Input: &updatepb.Input{Name: "decide"}},
			})
			wantDenied(t, "UpdateWorkflowExecution", err)

			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.FrontendHTTPAddr()+"/api/v1/namespaces/"+DefaultNamespace+"/workflows", nil)
			if err != nil {
				t.Fatal(err)
			}
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("frontend HTTP API list without the key: %s, want 403", resp.Status)
			}
		})
	}
	t.Run("WithKey", func(t *testing.T) {
		c := dial(t, s, DefaultNamespace)
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: DefaultNamespace})
		if err != nil {
			t.Fatalf("ListWorkflowExecutions with the key: %v", err)
		}
		if len(resp.GetExecutions()) == 0 {
			t.Fatal("ListWorkflowExecutions with the key: no executions")
		}
	})
}

func wantDenied(t *testing.T, call string, err error) {
	t.Helper()
	var denied *serviceerror.PermissionDenied
	if !errors.As(err, &denied) {
		t.Errorf("%s without the key: %v (%T), want PermissionDenied", call, err, err)
	}
}

// checkUIGuarded runs TestServer's checks of the Web UI on s: a foreign
// Host or Origin is refused before the UI sees it, and writes are refused
// by default.
func checkUIGuarded(ctx context.Context, t *testing.T, s *Server, workflowID string) {
	list := "http://" + s.UIAddr() + "/api/v1/namespaces/" + DefaultNamespace + "/workflows"
	tests := []struct {
		name   string
		method string
		url    string
		header map[string]string
		want   int
	}{
		{"ForeignHostRefused", http.MethodGet, list, map[string]string{"Host": "rebind.example:8233"}, http.StatusMisdirectedRequest},
		{"ForeignOriginRefused", http.MethodGet, list, map[string]string{"Origin": "http://rebind.example:8233"}, http.StatusForbidden},
		{"LoopbackAnswers", http.MethodGet, list, map[string]string{"Host": "localhost:8233"}, http.StatusOK},
		// An Authorization header skips ui-server's CSRF check, so the
		// refusal is the read-only one.
		{"WritesRefused", http.MethodPost, "http://" + s.UIAddr() + "/api/v1/namespaces/" + DefaultNamespace + "/workflows/" + workflowID + "/terminate",
			map[string]string{"Authorization": "Bearer x", "Content-Type": "application/json"}, http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body *strings.Reader
			if tt.method == http.MethodPost {
				body = strings.NewReader(`{"reason":"test"}`)
			} else {
				body = strings.NewReader("")
			}
			req, err := http.NewRequestWithContext(ctx, tt.method, tt.url, body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s %s %v: %s, want %d", tt.method, tt.url, tt.header, resp.Status, tt.want)
			}
		})
	}
}
