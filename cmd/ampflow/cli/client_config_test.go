package cli

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// TestClientReadsServerFile: run in the folder of a server's
// ampflow.yaml, whose server settings are incomplete without the server's
// secrets, a client command reads api.url and api.token from it and
// nothing else, and its errors name the file it read.
func TestClientReadsServerFile(t *testing.T) {
	f := &fakeTasks{states: []task.State{{Status: task.StatusInReview}}}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Tasks: f,
		Tokens: []config.AuthToken{{Token: "tok-admin-0123456789", Role: amp.RoleAdmin, Name: "ops"}}}).Handler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	t.Chdir(dir)
	server := "telegram:\n  enabled: true\n  mode: webhook\ngate:\n  agents: [{id: resume-tailor, key_env: RESUME_TAILOR_KEY, projects: [job-search]}]\n"
	write := func(url string) {
		body := "api:\n  url: " + url + "\n  token: tok-admin-0123456789\n" + server
		if err := os.WriteFile(filepath.Join(dir, config.DefaultFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) result {
		var stdout, stderr strings.Builder
		code := Main(context.Background(), Options{Args: args, Stdout: &stdout, Stderr: &stderr,
			LookupEnv: func(string) (string, bool) { return "", false }})
		return result{code, stdout.String(), stderr.String()}
	}
	write(srv.URL)
	if c, err := config.LoadEnv(config.New(), config.DefaultFile, nil); err == nil && c.Validate() == nil {
		t.Fatal("the server file is valid as it is; the test needs one that lacks the server's secrets")
	}
	r := run("task", "show", "T-2026-003", "-o", "json")
	wantExit(t, r, ExitOK)
	if !strings.Contains(r.stdout, `"status":"in_review"`) {
		t.Errorf("stdout = %q", r.stdout)
	}

	srv.Close()
	r = run("task", "show", "T-2026-003")
	wantExit(t, r, ExitFailed)
	if want := "(read from " + filepath.Join(dir, config.DefaultFile) + ")"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want the file named: %q", r.stderr, want)
	}
}
