package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestClaims: two executors see one dispatch; the first to ACK it holds
// the task, and the other's ACK and heartbeat are refused with 409
// claimed naming the holder. The holder, restarted after its ACK, finds
// its work with include=acked (ampflow inbox --mine).
func TestClaims(t *testing.T) {
	p := startDev(t, t.TempDir(), "AMPFLOW_AUTH_TOKENS=tok-plan-0123456789ab:coordinator:planner,tok-a-0123456789abcdef:executor:exec-a,tok-b-0123456789abcdef:executor:exec-b")
	plan, _ := json.Marshal(lowRiskPlan(gitRepo(t)))
	planFile := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, planFile, string(plan))
	id := lastLine(mustCLI(t, p, "tok-plan-0123456789ab", "task", "start", "-f", planFile))
	if !task.ValidID(id) {
		t.Fatalf("task start printed %q last, want the task id", id)
	}

	inbox := func(token string, args ...string) []amp.Message {
		t.Helper()
		var msgs []amp.Message
		out := mustCLI(t, p, token, append([]string{"-o", "json", "inbox", "--as", "executor"}, args...)...)
		if err := json.Unmarshal([]byte(out), &msgs); err != nil {
			t.Fatalf("inbox printed %q: %v", out, err)
		}
		return msgs
	}
	// Both executors see the dispatch.
	seenA, seenB := inbox("tok-a-0123456789abcdef", "--wait", "30s"), inbox("tok-b-0123456789abcdef", "--wait", "30s")
	if len(seenA) != 1 || len(seenB) != 1 || seenA[0].MsgID != seenB[0].MsgID || seenA[0].TaskID != id {
		t.Fatalf("inboxes %+v and %+v, want the dispatch of %s in both", seenA, seenB, id)
	}
	d := seenA[0]
	mustCLI(t, p, "tok-a-0123456789abcdef", "ack", d.MsgID, "--as", "executor")

	claimed := func(what string, args ...string) {
		t.Helper()
		_, errOut, code := bareCLI(t, p, "tok-b-0123456789abcdef", append([]string{"-o", "json"}, args...)...)
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if code != 1 || json.Unmarshal([]byte(errOut), &e) != nil || e.Error.Code != string(task.CodeClaimed) || !strings.Contains(e.Error.Message, "exec-a") {
			t.Errorf("exec-b's %s: exit %d, stderr %q; want 1, claimed, naming exec-a", what, code, errOut)
		}
	}
	claimed("ACK", "ack", d.MsgID, "--as", "executor")
	claimed("heartbeat", "heartbeat", id, "--as", "executor", "--note", "mine")
	// The inbox is the SSOT's, written just after the ACK.
	eventually(t, 30*time.Second, "exec-a's dispatch out of exec-b's inbox and in exec-a's own", func() (bool, error) {
		b, mine := inbox("tok-b-0123456789abcdef"), inbox("tok-a-0123456789abcdef", "--mine")
		return len(b) == 0 && len(mine) == 1, fmt.Errorf("exec-b sees %d, exec-a holds %d", len(b), len(mine))
	})
	if out := mustCLI(t, p, "tok-plan-0123456789ab", "task", "show", id); !strings.Contains(out, "exec-a (executor, working)") {
		t.Errorf("task show does not name exec-a as the holder:\n%s", out)
	}

	// exec-a restarts: its work is in its inbox with include=acked.
	if msgs := inbox("tok-a-0123456789abcdef"); len(msgs) != 0 {
		t.Errorf("exec-a's inbox without include=acked: %+v, want it empty", msgs)
	}
	if msgs := inbox("tok-a-0123456789abcdef", "--mine"); len(msgs) != 1 || msgs[0].MsgID != d.MsgID {
		t.Errorf("inbox --mine of exec-a: %+v, want %s", msgs, d.MsgID)
	}
	var page struct {
		Messages []amp.Message `json:"messages"`
		Acked    []struct {
			MsgID string `json:"msg_id"`
			By    string `json:"by"`
		} `json:"acked"`
	}
	code, _ := newAPIClient(t, p.api, "tok-a-0123456789abcdef").call("GET", "/v1/inbox?include=acked", nil, &page)
	if code != http.StatusOK || len(page.Messages) != 1 || len(page.Acked) != 1 || page.Acked[0].MsgID != d.MsgID || page.Acked[0].By != "exec-a" {
		t.Errorf("GET /v1/inbox?include=acked as exec-a: %d %+v, want the dispatch, acked by exec-a", code, page)
	}
	// Its ACK again changes nothing.
	if out := mustCLI(t, p, "tok-a-0123456789abcdef", "ack", d.MsgID, "--as", "executor"); !strings.HasPrefix(out, "duplicate:") {
		t.Errorf("exec-a's ACK again: %q, want a duplicate", out)
	}
}
