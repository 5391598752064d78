package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// The end-to-end tests drive the real CLIs that .ci/agents.sh installs. They
// find them in AMPFLOW_AGENTS_BIN (default <repo>/.cache/agents/node_modules/.bin)
// and skip when one is missing, unless AMPFLOW_TEST_AGENTS=1, when they fail.
//
// With AMPFLOW_RECORD=1 they also write each run's stream to testdata/, which
// the decoder tests replay:
//
//	AMPFLOW_RECORD=1 go test ./activities/runner -run 'Test(Claude|Codex|Gemini|OpenCode)'
func agentsBin(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("AMPFLOW_AGENTS_BIN")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", ".cache", "agents", "node_modules", ".bin")
	}
	bin := filepath.Join(dir, name)
	if executable(bin) != nil {
		if os.Getenv("AMPFLOW_TEST_AGENTS") == "1" {
			t.Fatalf("%s not installed in %s (run .ci/agents.sh)", name, dir)
		}
		t.Skipf("%s not installed in %s (run .ci/agents.sh, or set AMPFLOW_AGENTS_BIN)", name, dir)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	return bin
}

// baseEnv is what every CLI needs: a PATH with node and git, a HOME of its
// own, and a git identity.
func baseEnv(t *testing.T) []string {
	t.Helper()
	path := "/usr/local/bin:/usr/bin:/bin"
	if node, err := exec.LookPath("node"); err == nil {
		path = filepath.Dir(node) + ":" + path
	}
	return []string{
		"PATH=" + path,
		"HOME=" + t.TempDir(),
		"LANG=C.UTF-8",
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com",
		"GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com",
	}
}

// newRepo makes a repository with one commit on main.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "README")
	run("commit", "-q", "-m", "init")
	return dir
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// recorder collects a run's stream lines for AMPFLOW_RECORD.
type recorder struct {
	mu    sync.Mutex
	lines []byte
}

var tapMu sync.Mutex

// record taps the streams of runs until the test ends and, with
// AMPFLOW_RECORD=1, writes them to testdata/name.
func record(t *testing.T, name string) {
	if os.Getenv("AMPFLOW_RECORD") != "1" {
		return
	}
	tapMu.Lock()
	r := &recorder{}
	tap = func(line []byte) {
		r.mu.Lock()
		r.lines = append(append(r.lines, line...), '\n')
		r.mu.Unlock()
	}
	t.Cleanup(func() {
		tap = nil
		tapMu.Unlock()
		if err := os.WriteFile(filepath.Join("testdata", name), r.lines, 0o644); err != nil {
			t.Error(err)
		}
	})
}

// agentCase is one CLI wired to a fake model.
type agentCase struct {
	runner string
	model  string
	// spec returns a Spec for the CLI talking to fake, with Dir unset.
	spec func(t *testing.T, fake *fakemodel.Server) Spec
	// shell is a tool call of the CLI's shell tool running command.
	shell func(command string) *fakemodel.ToolCall
	// costReported: the CLI reports dollars.
	costReported bool
}

func (c agentCase) commitScript() []fakemodel.Turn {
	return []fakemodel.Turn{
		{Text: "Writing and committing the file.", Tool: c.shell(
			"printf 'hello\\n' > hello.txt && git add hello.txt && git commit -q -m 'add hello' && printf 'COMMITTED-%d\\n' 42")},
		{Text: "Done: hello.txt is committed.", InputTokens: 120, OutputTokens: 15},
		{Text: "Resumed and still done."},
	}
}

// testCommitAndResume runs the CLI in a task worktree where the fake model
// has it commit a file through its shell tool, then resumes the session.
func testCommitAndResume(t *testing.T, c agentCase, recordAs string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	fake := fakemodel.New(c.commitScript()...)
	defer fake.Close()
	repo := newRepo(t)
	wt := filepath.Join(t.TempDir(), "worktrees", "task-1")
	if err := AddTaskWorktree(ctx, repo, wt, "ampflow/task-1"); err != nil {
		t.Fatal(err)
	}
	pidDir := t.TempDir()
	spec := c.spec(t, fake)
	spec.Dir = wt
	spec.Prompt = "Add hello.txt and commit it."
	spec.SystemPrompt = "SYSTEM-PROMPT-MARKER: report in JSON."
	spec.PIDDir = pidDir
	spec.Timeout = 3 * time.Minute
	spec.IdleTimeout = 2 * time.Minute

	record(t, recordAs)
	var events []Event
	o, err := Run(ctx, spec, func(e Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	if !o.Succeeded() {
		t.Fatalf("run did not succeed: %+v\nrequests: %d", o, len(fake.Requests()))
	}
	if o.SessionID == "" {
		t.Error("no session id")
	}
	if o.Usage.InputTokens == 0 || o.Usage.OutputTokens == 0 {
		t.Errorf("usage not counted: %+v", o.Usage)
	}
	if o.Usage.CostReported != c.costReported {
		t.Errorf("CostReported = %v, want %v (%+v)", o.Usage.CostReported, c.costReported, o.Usage)
	}
	if !strings.Contains(o.Text, "hello.txt is committed") {
		t.Errorf("final text %q", o.Text)
	}
	// The commit is in git, on the task branch, with the file.
	if msg := gitOut(t, wt, "log", "-1", "--format=%s", "ampflow/task-1"); msg != "add hello" {
		t.Errorf("last commit on the task branch is %q", msg)
	}
	if files := gitOut(t, wt, "show", "--name-only", "--format=", "HEAD"); files != "hello.txt" {
		t.Errorf("commit holds %q", files)
	}
	// The tool's output reached the model in the next request.
	reqs := fake.AgentRequests()
	if len(reqs) < 2 {
		t.Fatalf("the model got %d agent requests", len(reqs))
	}
	if !reqs[1].Text("COMMITTED-42") {
		t.Error("the tool result did not reach the model")
	}
	if !reqs[0].Text("SYSTEM-PROMPT-MARKER") {
		t.Error("the system prompt did not reach the model")
	}
	var call, result bool
	for _, e := range events {
		call = call || e.Kind == EventToolCall && strings.Contains(string(e.Input), "git commit")
		result = result || e.Kind == EventToolResult && strings.Contains(e.Text, "COMMITTED-42")
	}
	if !call || !result {
		t.Errorf("events: tool call %v, tool result %v", call, result)
	}
	if left, _ := os.ReadDir(pidDir); len(left) != 0 {
		t.Errorf("pid files left: %v", left)
	}
	if groupAlive(o.PID) {
		t.Error("processes left in the run's group")
	}

	// Resume: the CLI accepts the session and sends the earlier turns along.
	spec.SessionID = o.SessionID
	spec.Prompt = "Anything left to do?"
	o2, err := Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !o2.Succeeded() || !strings.Contains(o2.Text, "Resumed") {
		t.Fatalf("resumed run: %+v", o2)
	}
	if o2.SessionID != o.SessionID {
		t.Errorf("resumed session id %q, want %q", o2.SessionID, o.SessionID)
	}
	reqs = fake.AgentRequests()
	last := reqs[len(reqs)-1]
	if !last.Text("Anything left to do?") || !last.Text("COMMITTED-42") {
		t.Error("the resumed request lacks the new prompt or the earlier history")
	}
}

// testIdleKill has the model make one tool call, then hold its next stream
// open sending nothing; the idle watchdog must kill the CLI's whole group.
// (The tool call first, because OpenCode prints nothing before the model's
// first reply.)
func testIdleKill(t *testing.T, c agentCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fake := fakemodel.New(fakemodel.Turn{Tool: c.shell("echo working")}, fakemodel.Turn{Hang: true})
	defer fake.Close()
	dir := newRepo(t)
	spec := c.spec(t, fake)
	spec.Dir = dir
	spec.Prompt = "Say hello."
	spec.PIDDir = t.TempDir()
	spec.FirstEventTimeout = 90 * time.Second
	// Long enough for a CLI on a loaded machine to make its first
	// request after its first event (OpenCode's ACP server answers
	// session/new well before its model request).
	spec.IdleTimeout = 8 * time.Second

	o, err := Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Reason != ReasonIdle {
		t.Fatalf("reason %q, want %q; outcome %+v", o.Reason, ReasonIdle, o)
	}
	if fake.Served() != 2 {
		t.Errorf("%d turns served, want 2 (the tool call, the hang)", fake.Served())
	}
	if groupAlive(o.PID) {
		t.Error("processes left in the run's group")
	}
	if left, _ := os.ReadDir(spec.PIDDir); len(left) != 0 {
		t.Errorf("pid files left: %v", left)
	}
}

// testFailingCommand has the model run a shell command that prints a
// line and exits 3; the tool result carries the output and, where the
// CLI reports it (wantCode), the exit code. Gemini CLI's stream-json
// reports a command that ran as a success, whatever its status.
func testFailingCommand(t *testing.T, c agentCase, recordAs string, wantCode bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fake := fakemodel.New(fakemodel.Turn{Text: "Running the check.", Tool: c.shell("echo FAILING-OUT; exit 3")},
		fakemodel.Turn{Text: "The check failed."})
	defer fake.Close()
	spec := c.spec(t, fake)
	spec.Dir = newRepo(t)
	spec.Prompt = "Run the check."
	spec.Timeout = 2 * time.Minute
	spec.FirstEventTimeout = 90 * time.Second
	record(t, recordAs)
	var result *Event
	o, err := Run(ctx, spec, func(e Event) {
		if e.Kind == EventToolResult && result == nil {
			result = &e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Succeeded() {
		t.Fatalf("run did not succeed: %+v", o)
	}
	if result == nil {
		t.Fatal("no tool result")
	}
	if !strings.Contains(result.Text, "FAILING-OUT") {
		t.Errorf("tool result %q lacks the command's output", result.Text)
	}
	if wantCode && !result.IsError {
		t.Errorf("tool result of a command that exited 3 is not an error: %+v", result)
	}
	if wantCode && (result.ExitCode == nil || *result.ExitCode != 3) {
		t.Errorf("exit code %v, want 3", result.ExitCode)
	}
}
