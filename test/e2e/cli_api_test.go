package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// bareCLI runs the ampflow binary from an empty directory with no
// AMPFLOW_* variable but AMPFLOW_API_URL (and AMPFLOW_API_TOKEN when token
// is set): all it knows is where the API is.
func bareCLI(t *testing.T, p *devProc, token string, args ...string) (string, string, int) {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMPFLOW_") {
			env = append(env, kv)
		}
	}
	env = append(env, "AMPFLOW_API_URL=http://"+p.api)
	if token != "" {
		env = append(env, "AMPFLOW_API_TOKEN="+token)
	}
	return runAmpflow(t, env, nil, args...)
}

// mustCLI runs bareCLI and fails the test unless it exits 0.
func mustCLI(t *testing.T, p *devProc, token string, args ...string) string {
	t.Helper()
	out, errOut, code := bareCLI(t, p, token, args...)
	if code != 0 {
		t.Fatalf("ampflow %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// startByCLI starts a low-risk task whose plan waits for an admin and
// returns its id once its plan approval is pending, as `pending` lists it.
func startByCLI(t *testing.T, p *devProc, token string) string {
	t.Helper()
	plan, _ := json.Marshal(lowRiskPlan(gitRepo(t)))
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(plan))
	id := lastLine(mustCLI(t, p, token, "task", "start", "-f", planFile))
	if !task.ValidID(id) {
		t.Fatalf("task start printed %q last, want the task id", id)
	}
	eventually(t, 30*time.Second, "the plan approval of "+id+" in ampflow pending", func() (bool, error) {
		var ds []decision.Decision
		out := mustCLI(t, p, token, "-o", "json", "pending")
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			return false, fmt.Errorf("pending printed %q: %w", out, err)
		}
		for _, d := range ds {
			if d.Subject == id && d.Kind == task.KindPlanApproval {
				return true, nil
			}
		}
		return false, fmt.Errorf("pending lists %+v", ds)
	})
	return id
}

// TestCLIOverAPI drives a task with nothing but AMPFLOW_API_URL: the CLI
// reaches `ampflow dev` through its HTTP API only, and in open mode acts as
// the API's own user, the operating-system user dev makes its admin.
func TestCLIOverAPI(t *testing.T) {
	me, err := user.Current()
	if err != nil || me.Username == "" {
		t.Skipf("no operating-system user name: %v", err)
	}
	p := startDev(t, t.TempDir(), "AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin")
	id := startByCLI(t, p, "")

	if out := mustCLI(t, p, "", "task", "list"); !strings.Contains(out, id) || !strings.Contains(out, "awaiting_approval") {
		t.Errorf("task list lacks %s awaiting approval:\n%s", id, out)
	}
	if out := mustCLI(t, p, "", "task", "show", id); !strings.Contains(out, id) || !strings.Contains(out, "plan_approval") {
		t.Errorf("task show lacks the task or its plan approval:\n%s", out)
	}
	if out := mustCLI(t, p, "", "decide", id, "--option", "approve"); !strings.Contains(out, "approve by "+me.Username+";") {
		t.Errorf("decide: %q; want a decision by %s", out, me.Username)
	}

	var inbox []amp.Message
	out := mustCLI(t, p, "", "-o", "json", "inbox", "--as", "executor", "--wait", "30s")
	if err := json.Unmarshal([]byte(out), &inbox); err != nil || len(inbox) != 1 || inbox[0].TaskID != id || inbox[0].Type != amp.TypeTaskDispatch {
		t.Fatalf("inbox --as executor printed %q (%v); want the dispatch of %s", out, err, id)
	}
	d := inbox[0]
	if out := mustCLI(t, p, "", "ack", d.MsgID, "--as", "executor"); !strings.HasPrefix(out, "acknowledged with ack-"+id) {
		t.Errorf("ack: %q", out)
	}

	var hist []struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
	}
	eventually(t, 30*time.Second, "the ACK in the history of "+id, func() (bool, error) {
		out := mustCLI(t, p, "", "-o", "json", "task", "history", id)
		if err := json.Unmarshal([]byte(out), &hist); err != nil {
			return false, err
		}
		for _, r := range hist {
			if r.Kind == "ack" {
				return true, nil
			}
		}
		return false, fmt.Errorf("history %+v", hist)
	})
	if out := mustCLI(t, p, "", "task", "history", id); !strings.Contains(out, "plan_approval decided approve by "+me.Username+" via api") {
		t.Errorf("task history lacks the decision by %s:\n%s", me.Username, out)
	}
	if out := mustCLI(t, p, "", "msg", "show", d.MsgID); !strings.Contains(out, d.MsgID) || !strings.Contains(out, `"type": "task_dispatch"`) {
		t.Errorf("msg show %s:\n%s", d.MsgID, out)
	}
}

// TestCLIOverAPITokens: with tokens configured the CLI's token decides
// what it may do, and its name is who decides.
func TestCLIOverAPITokens(t *testing.T) {
	p := startDev(t, t.TempDir(), "AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin",
		"AMPFLOW_AUTH_TOKENS=tok1-0123456789ab:admin:ana,tok2-0123456789ab:executor:exec1")
	id := startByCLI(t, p, "tok1-0123456789ab")

	_, errOut, code := bareCLI(t, p, "tok2-0123456789ab", "-o", "json", "decide", id, "--option", "approve")
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if code != 1 || json.Unmarshal([]byte(errOut), &e) != nil || e.Error.Code != "forbidden" || !strings.Contains(e.Error.Message, "AMPFLOW_API_TOKEN") {
		t.Errorf("decide with an executor token: exit %d, stderr %q; want 1, forbidden, naming AMPFLOW_API_TOKEN", code, errOut)
	}
	if _, errOut, code := bareCLI(t, p, "", "pending"); code != 1 || !strings.Contains(errOut, "set api.token / AMPFLOW_API_TOKEN") {
		t.Errorf("pending without a token: exit %d, stderr %q; want 1 naming api.token", code, errOut)
	}

	if out := mustCLI(t, p, "tok1-0123456789ab", "decide", id, "--option", "approve"); !strings.Contains(out, "approve by ana;") {
		t.Errorf("decide with the admin token: %q; want a decision by ana", out)
	}
	if out := mustCLI(t, p, "tok2-0123456789ab", "task", "history", id); !strings.Contains(out, "plan_approval decided approve by ana via api") {
		t.Errorf("task history lacks the decision by ana:\n%s", out)
	}
}
