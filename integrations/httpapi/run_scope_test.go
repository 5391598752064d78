package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/runcred"
	"github.com/ampflow/ampflow/amp/task"
)

var testRunKey = runcred.Key([]byte("decision key of the tests, 32 bytes"))

// runCredential is a run's credential for role on taskID, as a worker
// mints it, valid for an hour from testNow.
func runCredential(t *testing.T, role amp.Role, taskID string) string {
	t.Helper()
	tok, _, err := runcred.Mint(testRunKey, runcred.Claims{Task: taskID, Role: role, Agent: "codex", Expires: testNow.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestRunCredential: a run's credential acts only on its task, as its
// role, on the routes a run needs; never as an admin, also when the API
// is open (ampflow dev), where a request without one would be.
func TestRunCredential(t *testing.T) {
	for _, open := range []bool{false, true} {
		name := map[bool]string{false: "Tokens", true: "Open"}[open]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, open)
			h.openDecisions(openDecision())
			exec := runCredential(t, amp.RoleExecutor, "T-2026-044")
			refused := []struct{ method, path, body string }{
				// Admin paths: decide, and every other route not in RunRoutes.
				{"POST", "/v1/decisions/T-2026-044-d1", decideBody("approve", "", testDigest)},
				{"GET", "/v1/decisions", ""},
				{"POST", "/v1/tasks", `{"task_id":"T-2026-044"}`},
				{"POST", "/v1/tasks/T-2026-044/cancel", `{"reason":"x"}`},
				{"GET", "/v1/tasks", ""},
				// Another task, in the path, as task_id, or in a msg_id.
				{"GET", "/v1/tasks/T-2026-045", ""},
				{"POST", "/v1/messages", strings.ReplaceAll(taskResult, "T-2026-044", "T-2026-045")},
				{"POST", "/v1/heartbeats", `{"task_id":"T-2026-045"}`},
				{"POST", "/v1/acks", `{"msg_id":"task_dispatch-T-2026-045-1740576727001"}`},
			}
			for _, c := range refused {
				r := h.do(t, c.method, c.path, exec, c.body)
				if r.status != http.StatusForbidden {
					t.Errorf("%s %s: status %d %s, want 403", c.method, c.path, r.status, r.body)
				} else if e := r.errorBody(t); e.Code != task.CodeForbidden {
					t.Errorf("%s %s: %+v", c.method, c.path, e)
				}
			}
			if n := h.tasks.callCount(); n != 0 {
				t.Errorf("refused requests reached the tasks: %v", h.tasks.calls)
			}

			// Its own task, as its own role: taken, under the run's name.
			r := h.do(t, "POST", "/v1/messages", exec, taskResult)
			wantStatus(t, r, http.StatusAccepted)
			if len(h.tasks.agents) != 1 || h.tasks.agents[0] != "codex" {
				t.Errorf("agents %v, want the run's name codex", h.tasks.agents)
			}
			// The executor's run does not speak as the reviewer.
			r = h.do(t, "POST", "/v1/messages", exec, reviewVerdict)
			wantStatus(t, r, http.StatusForbidden)
			if len(h.tasks.submitted) != 1 {
				t.Errorf("a verdict from the executor's run reached the task: %d submitted", len(h.tasks.submitted))
			}
		})
	}
}

// TestRunCredentialRefused: an expired, forged or foreign-keyed
// credential is unauthenticated, and never falls back to the open API's
// admin.
func TestRunCredentialRefused(t *testing.T) {
	expired, _, _ := runcred.Mint(testRunKey, runcred.Claims{Task: "T-2026-044", Role: amp.RoleExecutor, Expires: testNow.Unix()})
	foreign, _, _ := runcred.Mint(runcred.Key([]byte("another key")), runcred.Claims{Task: "T-2026-044", Role: amp.RoleExecutor, Expires: testNow.Add(time.Hour).Unix()})
	valid := runCredential(t, amp.RoleExecutor, "T-2026-044")
	for _, open := range []bool{false, true} {
		h := newHarness(t, open)
		for name, cred := range map[string]string{"expired": expired, "foreign": foreign, "cut": valid[:len(valid)-4]} {
			r := h.do(t, "GET", "/v1/tasks/T-2026-044", cred, "")
			if r.status != http.StatusUnauthorized {
				t.Errorf("open=%v %s credential: status %d %s", open, name, r.status, r.body)
			}
		}
		if h.tasks.callCount() != 0 {
			t.Errorf("open=%v: refused credentials reached the tasks: %v", open, h.tasks.calls)
		}
	}
	// A server given no run key takes no credential.
	h := newHarness(t, false)
	h.srv.runKey = nil
	if r := h.do(t, "GET", "/v1/tasks/T-2026-044", valid, ""); r.status != http.StatusUnauthorized {
		t.Errorf("no run key: status %d", r.status)
	}
}
