package devserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

var ampAttributes = map[string]enums.IndexedValueType{
	"AmpStatus":      enums.INDEXED_VALUE_TYPE_KEYWORD,
	"AmpRisk":        enums.INDEXED_VALUE_TYPE_KEYWORD,
	"AmpRejectCount": enums.INDEXED_VALUE_TYPE_INT,
	"AmpRepo":        enums.INDEXED_VALUE_TYPE_KEYWORD,
}

// testLogger writes warnings to stderr rather than t's output, because the
// server's goroutines may still log after a test has returned.
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func quietSDKLogger() sdklog.Logger { return sdklog.NewStructuredLogger(testLogger()) }

// startServer starts a server stopped when t ends. It may be called from
// any goroutine: it reports failure with t.Errorf and a nil Server.
func startServer(t *testing.T, o Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if o.Logger == nil {
		o.Logger = testLogger()
	}
	began := time.Now()
	s, err := Start(ctx, o)
	if err != nil {
		t.Errorf("Start(%s): %v", o.DataDir, err)
		return nil
	}
	t.Logf("Start(%s) took %v; frontend %s, UI %q", o.DataDir, time.Since(began).Round(time.Millisecond), s.FrontendAddr(), s.UIAddr())
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func mustStartServer(t *testing.T, o Options) *Server {
	t.Helper()
	s := startServer(t, o)
	if s == nil {
		t.FailNow()
	}
	return s
}

// dial connects to s with its API key.
func dial(t *testing.T, s *Server, namespace string) client.Client {
	t.Helper()
	return dialKey(t, s.FrontendAddr(), namespace, s.APIKey())
}

// dialKey connects to addr presenting key, or no credential when key is
// empty.
func dialKey(t *testing.T, addr, namespace, key string) client.Client {
	t.Helper()
	o := client.Options{
		HostPort:          addr,
		Namespace:         namespace,
		Logger:            quietSDKLogger(),
		ConnectionOptions: client.ConnectionOptions{TLSDisabled: true},
	}
	if key != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	c, err := client.Dial(o)
	if err != nil {
		t.Fatalf("dialing %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

type greetInput struct{ Name string }
type greetResult struct{ Greeting string }

func greet(_ workflow.Context, in greetInput) (greetResult, error) {
	return greetResult{Greeting: "hello " + in.Name}, nil
}

// httpGet returns the body of a GET of url, failing t unless it is 200 OK.
func httpGet(ctx context.Context, t *testing.T, url string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return body
}

func freeTestPort(t *testing.T) int {
	t.Helper()
	port, err := freePort(loopback)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestServer runs a workflow, lists it by a search attribute, checks the UI,
// then restarts the server on the same directory and finds the workflow
// again. A second server runs beside the first the whole time.
func TestServer(t *testing.T) {
	dir, otherDir, uiPort := t.TempDir(), t.TempDir(), freeTestPort(t)
	var (
		s, other *Server
		wg       sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		s = startServer(t, Options{DataDir: dir, UIPort: uiPort, SearchAttributes: ampAttributes})
	}()
	go func() {
		defer wg.Done()
		other = startServer(t, Options{DataDir: otherDir, Namespace: "other"})
	}()
	wg.Wait()
	if s == nil || other == nil {
		t.FailNow()
	}
	if s.FrontendAddr() == other.FrontendAddr() {
		t.Fatalf("both servers listen on %s", s.FrontendAddr())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dial(t, s, DefaultNamespace)
	const workflowID = "greet-1"

	t.Run("SearchAttributesListed", func(t *testing.T) {
		resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: DefaultNamespace})
		if err != nil {
			t.Fatal(err)
		}
		for name, typ := range ampAttributes {
			if got := resp.GetCustomAttributes()[name]; got != typ {
				t.Errorf("search attribute %s: type %v, want %v", name, got, typ)
			}
		}
	})

	t.Run("WorkflowCompletes", func(t *testing.T) {
		w := worker.New(c, "devserver-test", worker.Options{})
		w.RegisterWorkflow(greet)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:        workflowID,
			TaskQueue: "devserver-test",
			TypedSearchAttributes: temporal.NewSearchAttributes(
				temporal.NewSearchAttributeKeyKeyword("AmpStatus").ValueSet("greeted"),
				temporal.NewSearchAttributeKeyInt64("AmpRejectCount").ValueSet(2),
			),
		}, greet, greetInput{Name: "amp"})
		if err != nil {
			t.Fatal(err)
		}
		var res greetResult
		if err := run.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		if res.Greeting != "hello amp" {
			t.Fatalf("greeting %q, want %q", res.Greeting, "hello amp")
		}
	})

	t.Run("ListedBySearchAttribute", func(t *testing.T) {
		// Visibility is written after the workflow closes, not with it.
		query := "AmpStatus = 'greeted' AND AmpRejectCount = 2"
		for {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: DefaultNamespace, Query: query})
			if err != nil {
				t.Fatalf("listing %q: %v", query, err)
			}
			if len(resp.GetExecutions()) == 1 && resp.GetExecutions()[0].GetExecution().GetWorkflowId() == workflowID {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("listing %q: %d executions, want %s", query, len(resp.GetExecutions()), workflowID)
			case <-time.After(50 * time.Millisecond):
			}
		}
	})

	t.Run("UIAnswers", func(t *testing.T) {
		index := httpGet(ctx, t, "http://"+s.UIAddr()+"/")
		// The page's scripts are embedded too, so the UI works offline.
		script := regexp.MustCompile(`/_app/[^"']+\.js`).FindString(string(index))
		if script == "" {
			t.Fatalf("GET / on the UI: no /_app/ script in %.200q", index)
		}
		httpGet(ctx, t, "http://"+s.UIAddr()+script)

		// The UI's API proxies to the embedded frontend.
		var ns struct {
			NamespaceInfo struct{ Name string } `json:"namespaceInfo"`
		}
		body := httpGet(ctx, t, "http://"+s.UIAddr()+"/api/v1/namespaces/"+DefaultNamespace)
		if err := json.Unmarshal(body, &ns); err != nil || ns.NamespaceInfo.Name != DefaultNamespace {
			t.Fatalf("UI API namespace %q, error %v", ns.NamespaceInfo.Name, err)
		}
	})

	t.Run("KeyRequired", func(t *testing.T) { checkKeyRequired(ctx, t, s, workflowID) })
	t.Run("UIGuarded", func(t *testing.T) { checkUIGuarded(ctx, t, s, workflowID) })

	t.Run("DataDirLocked", func(t *testing.T) {
		s2, err := Start(ctx, Options{DataDir: dir, Logger: testLogger()})
		if err == nil {
			_ = s2.Stop()
			t.Fatal("a second server started on the same data directory")
		}
		if !errors.Is(err, ErrDataDirInUse) {
			t.Fatalf("error %v does not wrap ErrDataDirInUse", err)
		}
	})

	t.Run("OtherServerServesItsNamespace", func(t *testing.T) {
		oc := dial(t, other, "other")
		if _, err := oc.DescribeWorkflowExecution(ctx, workflowID, ""); err == nil {
			t.Fatalf("workflow %s found on the other server", workflowID)
		}
	})

	c.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	t.Run("RestartKeepsWorkflowsAndAddsAttributes", func(t *testing.T) {
		attrs := map[string]enums.IndexedValueType{"AmpExtra": enums.INDEXED_VALUE_TYPE_KEYWORD}
		for k, v := range ampAttributes {
			attrs[k] = v
		}
		s := mustStartServer(t, Options{DataDir: dir, SearchAttributes: attrs})
		c := dial(t, s, DefaultNamespace)
		desc, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
		if err != nil {
			t.Fatal(err)
		}
		if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			t.Fatalf("workflow %s is %v after restart, want completed", workflowID, st)
		}
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: DefaultNamespace, Query: "AmpExtra = 'x'"})
		if err != nil {
			t.Fatalf("querying by the attribute added on restart: %v", err)
		}
		if resp.GetCount() != 0 {
			t.Fatalf("count by AmpExtra = %d, want 0", resp.GetCount())
		}
	})
}

func TestStartRefusesDatabase(t *testing.T) {
	tests := []struct {
		name    string
		version string // "" leaves no version file
		want    []string
	}{
		{"OtherVersion", "1.20.0\n", []string{"1.20.0", ServerVersion, VersionFile}},
		{"NoVersionFile", "", []string{ServerVersion, VersionFile, "missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, DatabaseFile), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.version != "" {
				if err := os.WriteFile(filepath.Join(dir, VersionFile), []byte(tt.version), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := Start(ctx, Options{DataDir: dir, Logger: testLogger()})
			if err == nil {
				_ = s.Stop()
				t.Fatal("Start succeeded")
			}
			if !errors.Is(err, ErrVersionMismatch) {
				t.Errorf("error %v does not wrap ErrVersionMismatch", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
