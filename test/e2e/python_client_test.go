package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ampflow/ampflow/amp/task"
)

// TestPythonClient runs the ampflow package (clients/python) against one
// ampflow dev: its loops keep going through refusals and handler errors,
// its lease context manager takes a freed lease at once, its errors are
// typed by the API's codes, and it installs with pip.
func TestPythonClient(t *testing.T) {
	const (
		coordTok = "coord-secret-0123456789ab"
		aTok     = "exec-a-secret-0123456789ab"
		bTok     = "exec-b-secret-0123456789ab"
		aliceTok = "alice-secret-0123456789ab"
		bobTok   = "bob-secret-0123456789abcd"
	)
	p := startDev(t, t.TempDir(), "AMPFLOW_AUTH_TOKENS="+coordTok+":coordinator:coord,"+aTok+":executor:exec-a,"+
		bTok+":executor:exec-b,"+aliceTok+":executor:alice,"+bobTok+":reviewer:bob")
	api := "AMPFLOW_API_URL=http://" + p.api
	coord := newAPIClient(t, p.api, coordTok)

	t.Run("RaceNeitherDies", func(t *testing.T) {
		repo, plan := exampleRepo(t)
		start := func(branch string) string {
			plan["branch"] = branch
			var started struct {
				TaskID string `json:"task_id"`
			}
			if code := coord.do("POST", "/v1/tasks", map[string]any{"plan": plan}, &started); code != http.StatusCreated {
				t.Fatalf("starting a task on %s: %d", branch, code)
			}
			apiTaskStatus(t, coord, started.TaskID, task.StatusDispatched)
			return started.TaskID
		}
		first := start(plan["branch"].(string))
		// Both see the dispatch before either ACKs it; exec-a's ACK lands first.
		var aOut, bOut syncBuffer
		ctxA, stopA := context.WithCancel(context.Background())
		defer stopA()
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		a := startExample(ctxA, t, "agent.py", &aOut, "AMPFLOW_API_URL="+slowAcks(t, p.api, time.Second), "AMPFLOW_API_TOKEN="+aTok, "executor")
		b := startExample(ctx, t, "agent.py", &bOut, "AMPFLOW_API_URL="+slowAcks(t, p.api, 3*time.Second), "AMPFLOW_API_TOKEN="+bTok, "executor")
		aDone, bDone := waitFor(a), waitFor(b)
		apiTaskStatus(t, coord, first, task.StatusInReview)
		eventually(t, 30*time.Second, "exec-b refused as claimed", func() (bool, error) {
			return strings.Contains(bOut.String(), "claimed"), fmt.Errorf("exec-b:\n%s", bOut.String())
		})
		if exited(aDone) || exited(bDone) {
			t.Fatalf("an executor died after the race\nexec-a:\n%s\nexec-b:\n%s", aOut.String(), bOut.String())
		}
		// exec-b goes on: with exec-a gone, it does the next task.
		stopA()
		<-aDone
		git(t, repo, "branch", "feature/second")
		second := start("feature/second")
		apiTaskStatus(t, coord, second, task.StatusInReview)
		if exited(bDone) || strings.Contains(bOut.String(), "Traceback") {
			t.Fatalf("exec-b after its second task:\n%s", bOut.String())
		}
	})

	t.Run("HandlerErrorLogged", func(t *testing.T) {
		_, plan := exampleRepo(t)
		var out syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The handler fails on its first try; the loop logs it and tries again.
		cmd := pythonScript(ctx, t, `
import ampflow, runpy, sys
sys.argv = ["agent.py", "executor"]
tries = []
real_serve = ampflow.Client.serve
def serve(self, roles, handle, **kw):
    def flaky(m):
        tries.append(m.msg_id)
        if len(tries) == 1:
            raise RuntimeError("the build broke on try 1")
        return handle(m)
    return real_serve(self, roles, flaky, backoff=ampflow.Backoff(base=0.2), **kw)
ampflow.Client.serve = serve
runpy.run_path(`+strconv.Quote(filepath.Join(mustRoot(t), "examples", "agent.py"))+`, run_name="__main__")
`, &out, api, "AMPFLOW_API_TOKEN="+aTok, "GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@localhost",
			"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@localhost")
		done := waitFor(cmd)
		defer func() { cancel(); <-done }()
		var started struct {
			TaskID string `json:"task_id"`
		}
		if code := coord.do("POST", "/v1/tasks", map[string]any{"plan": plan}, &started); code != http.StatusCreated {
			t.Fatalf("starting a task: %d", code)
		}
		apiTaskStatus(t, coord, started.TaskID, task.StatusInReview)
		if s := out.String(); !strings.Contains(s, "RuntimeError: the build broke on try 1") || !strings.Contains(s, "trying again") {
			t.Errorf("the handler's error is not logged:\n%s", s)
		}
		if exited(done) {
			t.Errorf("the agent exited:\n%s", out.String())
		}
	})

	t.Run("LeaseTakenOnRelease", func(t *testing.T) {
		alice := newAPIClient(t, p.api, aliceTok)
		var held struct {
			LeaseID string `json:"lease_id"`
		}
		if code := alice.do("POST", "/v1/leases", map[string]any{"resource_key": "file:src/race.py", "agent_id": "alice", "ttl_seconds": 300}, &held); code != http.StatusCreated {
			t.Fatalf("alice's lease: %d", code)
		}
		var out syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := pythonScript(ctx, t, `
import ampflow, time
api = ampflow.Client()
print("waiting", flush=True)
with api.lease("file:src/race.py", ttl=30) as l:
    print("taken %.6f %s" % (time.time(), l.agent_id), flush=True)
`, &out, api, "AMPFLOW_API_TOKEN="+bobTok)
		done := waitFor(cmd)
		eventually(t, 20*time.Second, "bob waiting", func() (bool, error) {
			return strings.Contains(out.String(), "waiting"), fmt.Errorf("%s", out.String())
		})
		time.Sleep(time.Second) // bob is refused LOCK_CONFLICT a few times first
		if code := alice.do("DELETE", "/v1/leases/"+held.LeaseID, nil, nil); code != http.StatusOK {
			t.Fatalf("alice's release: %d", code)
		}
		released := time.Now()
		if err := <-done; err != nil {
			t.Fatalf("bob: %v\n%s", err, out.String())
		}
		m := regexp.MustCompile(`taken ([0-9.]+) bob`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("bob did not take the lease:\n%s", out.String())
		}
		at, _ := strconv.ParseFloat(m[1], 64)
		d := time.Unix(0, int64(at*1e9)).Sub(released)
		if d > 200*time.Millisecond {
			t.Errorf("bob took the lease %v after its release, want within 200ms", d)
		}
		t.Logf("bob took the lease %v after alice released it", d)
		var list struct {
			Leases []struct {
				State string `json:"state"`
			} `json:"leases"`
		}
		if code := alice.do("GET", "/v1/leases?agent_id=bob", nil, &list); code != http.StatusOK || len(list.Leases) != 1 || list.Leases[0].State != "released" {
			t.Errorf("bob's leases after the block: %d %+v, want one released", code, list)
		}
	})

	t.Run("TypedErrors", func(t *testing.T) {
		var out syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Each code the document lists has its class, with its status.
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Enum        []string `json:"enum"`
					Description string   `json:"description"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if code := coord.do("GET", "/v1/openapi.json", nil, &doc); code != http.StatusOK {
			t.Fatalf("GET /v1/openapi.json: %d", code)
		}
		codes := map[string]int{}
		for _, m := range regexp.MustCompile("- `([A-Za-z_]+)`: HTTP ([0-9]+)").FindAllStringSubmatch(doc.Components.Schemas["ErrorCode"].Description, -1) {
			codes[m[1]], _ = strconv.Atoi(m[2])
		}
		if len(codes) < 20 {
			t.Fatalf("the document's ErrorCode lists %d codes: %q", len(codes), doc.Components.Schemas["ErrorCode"].Description)
		}
		want, _ := json.Marshal(codes)
		cmd := pythonScript(ctx, t, `
import ampflow, json, os
api = ampflow.Client()
want = json.loads(os.environ["AMPFLOW_TEST_CODES"])
for code, status in want.items():
    cls = ampflow.errors.error_class(code)
    assert cls is not ampflow.APIError and cls.status == status, (code, status, cls, cls.status)
try:
    api.send("task_result", "T-2026-999", {"subtask_id": ""})
except ampflow.errors.APIError as e:
    print("send", type(e).__name__, e.status, e.code, json.dumps(e.fields))
try:
    api.acquire("repo:main", ttl_seconds=30)
except ampflow.errors.PermissionDenied as e:
    print("lease", type(e).__name__, e.status, e.code, json.dumps(e.fields))
print("me", json.dumps(api.whoami()))
`, &out, api, "AMPFLOW_API_TOKEN="+aTok, "AMPFLOW_TEST_CODES="+string(want))
		if err := cmd.Wait(); err != nil {
			t.Fatalf("python: %v\n%s", err, out.String())
		}
		s := out.String()
		for _, w := range []string{`send Invalid 400 invalid [{"path": "payload.`, `lease PermissionDenied 403 PERMISSION_DENIED [{"path": "resource_key"`,
			`me {"name": "exec-a", "role": "executor", "open": false}`} {
			if !strings.Contains(s, w) {
				t.Errorf("output lacks %q:\n%s", w, s)
			}
		}
	})

	t.Run("Installed", func(t *testing.T) {
		root := mustRoot(t)
		venv := filepath.Join(t.TempDir(), "venv")
		if out, err := exec.Command("python3", "-m", "venv", venv).CombinedOutput(); err != nil {
			t.Fatalf("python3 -m venv (Debian: apt-get install python3-venv): %v\n%s", err, out)
		}
		// --no-index: nothing is fetched; the package builds with its own
		// standard-library backend (clients/python/_build).
		pip := exec.Command(filepath.Join(venv, "bin", "pip"), "install", "--no-index", filepath.Join(root, "clients", "python"))
		if out, err := pip.CombinedOutput(); err != nil {
			t.Fatalf("pip install ./clients/python: %v\n%s", err, out)
		}
		// The guide's executor, copied away from the checkout: it imports
		// the installed package or nothing.
		dir := t.TempDir()
		src, err := os.ReadFile(filepath.Join(root, "examples", "agent.py"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "agent.py"), string(src))
		_, plan := exampleRepo(t)
		var started struct {
			TaskID string `json:"task_id"`
		}
		if code := coord.do("POST", "/v1/tasks", map[string]any{"plan": plan}, &started); code != http.StatusCreated {
			t.Fatalf("starting a task: %d", code)
		}
		var out syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(venv, "bin", "python"), filepath.Join(dir, "agent.py"), "executor")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), api, "AMPFLOW_API_TOKEN="+bTok, "PYTHONPATH=")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := waitFor(cmd)
		defer func() { cancel(); <-done }()
		apiTaskStatus(t, coord, started.TaskID, task.StatusInReview)
		check := exec.Command(filepath.Join(venv, "bin", "python"), "-c", "import ampflow; print(ampflow.__file__, ampflow.__version__)")
		check.Dir, check.Env = dir, append(os.Environ(), "PYTHONPATH=")
		if o, err := check.CombinedOutput(); err != nil || !strings.Contains(string(o), filepath.Join(venv, "lib")) {
			t.Errorf("ampflow in the venv: %v %s", err, o)
		}
	})
}

// exampleRepo is a fresh git repository with examples/plan.yaml's branch,
// and the plan pointed at it.
func exampleRepo(t *testing.T) (string, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(mustRoot(t), "examples", "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var plan map[string]any
	if err := yaml.Unmarshal(raw, &plan); err != nil {
		t.Fatalf("examples/plan.yaml: %v", err)
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, "README.md"), "demo\n")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "initial")
	git(t, repo, "branch", plan["branch"].(string))
	plan["repo"] = repo
	return repo, plan
}

// startExample starts examples/<name> with args, its output to out.
func startExample(ctx context.Context, t *testing.T, name string, out *syncBuffer, env ...string) *exec.Cmd {
	t.Helper()
	var args []string
	for len(env) > 0 && !strings.Contains(env[len(env)-1], "=") {
		args, env = append([]string{env[len(env)-1]}, args...), env[:len(env)-1]
	}
	cmd := pythonCmd(ctx, t, name, append(env, "GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@localhost",
		"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@localhost"), args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting examples/%s: %v", name, err)
	}
	return cmd
}

// apiTaskStatus waits until the task, read through the API, reaches want.
func apiTaskStatus(t *testing.T, c *apiClient, taskID string, want task.Status) {
	t.Helper()
	eventually(t, 90*time.Second, fmt.Sprintf("task %s %s", taskID, want), func() (bool, error) {
		var st task.State
		code := c.do("GET", "/v1/tasks/"+taskID, nil, &st)
		return code == http.StatusOK && (st.Status == want || st.UnderlyingStatus == want), fmt.Errorf("%d %s %s", code, st.Status, st.Reason)
	})
}

func mustRoot(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
