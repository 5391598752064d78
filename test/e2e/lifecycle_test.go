package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// cli runs the ampflow binary against a dev process's HTTP API, without
// a token, from a directory with no configuration.
func cli(t *testing.T, p *devProc, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	return cliAs(t, p, "", stdin, args...)
}

// cliAs is cli presenting token (AMPFLOW_API_TOKEN) when it is not empty.
func cliAs(t *testing.T, p *devProc, token string, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	env := append(os.Environ(), "AMPFLOW_API_URL=http://"+p.api)
	if token != "" {
		env = append(env, "AMPFLOW_API_TOKEN="+token)
	}
	return runAmpflow(t, env, stdin, args...)
}

// runAmpflow runs the ampflow binary with env from an empty directory and
// returns its stdout, stderr and exit code.
func runAmpflow(t *testing.T, env []string, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running ampflow %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestLifecycleCLIAndAPI starts a task with the CLI, plays executor and
// reviewer through the HTTP API with role tokens, and reaches done.
func TestLifecycleCLIAndAPI(t *testing.T) {
	p := startDev(t, t.TempDir(),
		"AMPFLOW_AUTH_TOKENS=exec-secret-0123456789ab:executor:codex,rev-secret-0123456789ab:reviewer:claude,coord-secret-0123456789ab:coordinator:planner")
	repo := gitRepo(t)
	exec := newAPIClient(t, p.api, "exec-secret-0123456789ab")
	rev := newAPIClient(t, p.api, "rev-secret-0123456789ab")
	a := &agent{t: t, repo: repo}

	plan, _ := json.Marshal(lowRiskPlan(repo))
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(plan))
	stdout, stderr, code := cliAs(t, p, "coord-secret-0123456789ab", nil, "task", "start", "-f", planFile)
	if code != 0 {
		t.Fatalf("task start: exit %d\n%s%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	id := lines[len(lines)-1]
	if !task.ValidID(id) {
		t.Fatalf("task start printed %q last, want the task id", id)
	}

	d := exec.inbox(amp.RoleExecutor, id, amp.TypeTaskDispatch)
	if code := rev.do("POST", "/v1/acks", map[string]string{"msg_id": d.MsgID, "as": "executor"}, nil); code != http.StatusForbidden {
		t.Errorf("a reviewer token ACKing as executor got %d, want 403", code)
	}
	if code := exec.do("POST", "/v1/acks", map[string]string{"msg_id": d.MsgID, "as": "executor"}, nil); code >= 300 {
		t.Fatalf("ACK answered %d", code)
	}
	result := a.work(d, "hello.txt", "hello\n")
	if code := rev.do("POST", "/v1/messages", result, nil); code != http.StatusForbidden {
		t.Errorf("a reviewer token sending a task_result got %d, want 403", code)
	}
	// The result claims two lines more than git shows: the answer, given
	// once the task has checked it against git, says so.
	r := result.Result()
	r.DiffSummary.LinesAdded += 2
	var taken struct {
		MsgID    string   `json:"msg_id"`
		Warnings []string `json:"warnings"`
	}
	if code := exec.do("POST", "/v1/messages", result, &taken); code != http.StatusAccepted {
		t.Fatalf("task_result answered %d", code)
	}
	if taken.MsgID != result.MsgID || len(taken.Warnings) != 1 || !strings.Contains(taken.Warnings[0], "lines_added") {
		t.Errorf("task_result answered %+v, want its msg_id and one warning on lines_added", taken)
	}
	req := rev.inbox(amp.RoleReviewer, id, amp.TypeReviewRequest)
	if req.Request().TaskResultRef != result.MsgID || req.Request().DiffURL == "" {
		t.Errorf("review request %+v does not point at the result", req.Request())
	}
	// The repository is not on GitHub: the diff is the SSOT's, served by
	// the API at diff_url.
	if u, ok := strings.CutPrefix(req.Request().DiffURL, rev.base); !ok {
		t.Errorf("diff_url %q is not on the API at %s", req.Request().DiffURL, rev.base)
	} else if diff := rev.text(u); !strings.Contains(diff, "+++ b/hello.txt") {
		t.Errorf("GET %s gave %q, want the result's diff", u, diff)
	}
	if code := rev.do("POST", "/v1/acks", map[string]string{"msg_id": req.MsgID, "as": "reviewer"}, nil); code >= 300 {
		t.Fatalf("reviewer ACK answered %d", code)
	}
	early := a.verdict(req, amp.DecisionApproved)
	early.TaskID = "T-2026-999"
	early.MsgID = amp.MsgID(amp.TypeReviewVerdict, early.TaskID, time.Now())
	if code := rev.do("POST", "/v1/messages", early, nil); code != http.StatusNotFound {
		t.Errorf("a verdict for an unknown task got %d, want 404", code)
	}
	if code := rev.do("POST", "/v1/messages", a.verdict(req, amp.DecisionApproved), nil); code != http.StatusAccepted {
		t.Fatalf("verdict answered %d", code)
	}

	var st task.State
	eventually(t, 30*time.Second, "task done", func() (bool, error) {
		code := exec.do("GET", "/v1/tasks/"+id, nil, &st)
		return code == http.StatusOK && st.Status == task.StatusDone, fmt.Errorf("status %s", st.Status)
	})
	out, stderr, code := cliAs(t, p, "rev-secret-0123456789ab", nil, "task", "history", id, "-o", "json")
	if code != 0 {
		t.Fatalf("task history: exit %d: %s", code, stderr)
	}
	for _, want := range []string{d.MsgID, result.MsgID, req.MsgID} {
		if !strings.Contains(out, want) {
			t.Errorf("task history lacks %s", want)
		}
	}
	if i, j := strings.Index(out, d.MsgID), strings.Index(out, req.MsgID); i < 0 || j < i {
		t.Errorf("task history is not in order")
	}
}
