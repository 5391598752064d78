package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ampflow/ampflow/amp/task"
)

// TestExampleAgent runs examples/agent.py, as an agent author would,
// against ampflow dev with examples/plan.yaml pointed at a fresh
// repository, and waits for the task to be done.
func TestExampleAgent(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "examples", "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var plan map[string]any
	if err := yaml.Unmarshal(raw, &plan); err != nil {
		t.Fatalf("examples/plan.yaml: %v", err)
	}
	branch, _ := plan["branch"].(string)
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, "README.md"), "demo\n")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "initial")
	git(t, repo, "branch", branch)
	plan["repo"] = repo

	p := startDev(t, t.TempDir())
	c := newAPIClient(t, p.api, "")
	var started struct {
		TaskID string `json:"task_id"`
	}
	if code := c.do("POST", "/v1/tasks", map[string]any{"plan": plan}, &started); code != http.StatusCreated {
		t.Fatalf("starting the example plan answered %d", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := pythonCmd(ctx, t, "agent.py", []string{"AMPFLOW_API_URL=http://" + p.api, "AMPFLOW_API_TOKEN=",
		"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@localhost",
		"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@localhost"})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting examples/agent.py: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The agent serves until stopped; it is stopped once the task is done.
	defer func() {
		cancel()
		<-exited
	}()

	var st task.State
	for deadline := time.Now().Add(2 * time.Minute); st.Status != task.StatusDone; {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("examples/agent.py exited (%v) with the task %s:\n%s", err, st.Status, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			exited <- <-exited // the output is whole once the agent has gone
			t.Fatalf("task %s is %s, not done, after 2m; agent output:\n%s\ndev output:\n%s", started.TaskID, st.Status, out.String(), p.output())
		}
		if code := c.do("GET", "/v1/tasks/"+started.TaskID, nil, &st); code != http.StatusOK {
			t.Fatalf("reading task %s answered %d", started.TaskID, code)
		}
		if st.Status.Terminal() && st.Status != task.StatusDone {
			t.Fatalf("task %s ended %s (%s); agent output:\n%s", started.TaskID, st.Status, st.Reason, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if log := git(t, repo, "log", "--format=%s", "main.."+branch); !strings.Contains(log, "CONTRIBUTING") {
		t.Errorf("branch %s has commits %q, want the agent's", branch, log)
	}
}
