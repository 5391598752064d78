package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAOFExampleAgent runs examples/aof_agent.py, as docs/guides/aof.md
// has it: the agent finds the task a coordinator dispatched to it
// (assignee=me), reports done and ends its session, and the task waits in
// review.
func TestAOFExampleAgent(t *testing.T) {
	const agentTok, coordTok, id = "swe-backend-secret-0123456789", "coord-secret-0123456789ab", "TASK-2026-02-09-057"
	p := startDev(t, t.TempDir(), "AMPFLOW_AUTH_TOKENS="+agentTok+":executor:swe-backend,"+coordTok+":coordinator:dispatcher")
	coord := newAPIClient(t, p.api, coordTok)
	if code := coord.do("POST", "/v1/aof/tasks", map[string]any{"taskId": id, "title": "Users API", "assignee": "swe-backend"}, nil); code != http.StatusCreated {
		t.Fatalf("creating %s: %d", id, code)
	}
	if code := coord.do("POST", "/v1/aof/tasks/"+id+"/dispatch", map[string]any{"agentId": "swe-backend", "ttlMs": 300000}, nil); code/100 != 2 {
		t.Fatalf("dispatching %s: %d", id, code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := []string{"AMPFLOW_API_URL=http://" + p.api, "AMPFLOW_API_TOKEN=" + agentTok, "AMPFLOW_MAX_TASKS=1"}
	out, err := runExample(ctx, t, "aof_agent.py", env)
	if err != nil || !strings.Contains(out, "working as swe-backend") || !strings.Contains(out, "reported "+id) {
		t.Fatalf("examples/aof_agent.py: %v\n%s\ndev:\n%s", err, out, p.output())
	}
	var task aofTaskView
	if code := coord.do("GET", "/v1/aof/tasks/"+id, nil, &task); code != http.StatusOK || task.Status != "review" || task.Review == nil {
		t.Fatalf("task after the agent: %d %+v", code, task)
	}
	if n := len(task.WorkLog); n < 3 || !strings.Contains(task.WorkLog[n-1], "3/3: ran the tests") {
		t.Errorf("work log %q, want the agent's three steps", task.WorkLog)
	}
	var rr struct {
		Outcome string `json:"outcome"`
		AgentID string `json:"agentId"`
	}
	if err := json.Unmarshal(task.Artifacts["run_result.json"], &rr); err != nil || rr.Outcome != "done" || rr.AgentID != "swe-backend" {
		t.Errorf("run_result.json %+v (%v)", rr, err)
	}

	// Run again: the task in review is no work of the agent's.
	short, stop := context.WithTimeout(context.Background(), 8*time.Second)
	defer stop()
	if out, _ = runExample(short, t, "aof_agent.py", env); strings.Contains(out, "reported") {
		t.Errorf("the agent restarted worked a task in review again:\n%s", out)
	}
}

// TestMeshExampleAgent runs examples/mesh_agent.py as bob, as
// docs/guides/mesh.md has it: alice asks for a review of a file, bob takes
// the file's lease, answers in the thread and releases it; asked about a
// file alice holds, bob answers with its holder.
func TestMeshExampleAgent(t *testing.T) {
	const aliceTok, bobTok = "alice-secret-0123456789ab", "bob-secret-0123456789ab"
	p := startDev(t, t.TempDir(), "AMPFLOW_AUTH_TOKENS="+aliceTok+":executor:alice,"+bobTok+":reviewer:bob")
	alice := newAPIClient(t, p.api, aliceTok)
	ask := func(path string) string {
		var ev struct {
			ID string `json:"id"`
		}
		body := map[string]any{"type": "agent.chat", "severity": "info", "payload": map[string]any{
			"from": "alice", "from_id": "alice", "to": "bob", "subject": "Code review", "content": "review " + path,
			"timestamp": time.Now().UTC().Format(time.RFC3339)}}
		if code := alice.do("POST", "/v1/events", body, &ev); code != http.StatusCreated && code != http.StatusOK {
			t.Fatalf("alice's chat: %d", code)
		}
		return ev.ID
	}
	var held struct {
		LeaseID string `json:"lease_id"`
	}
	if code := alice.do("POST", "/v1/leases", map[string]any{"resource_key": "file:src/db.py", "agent_id": "alice", "ttl_seconds": 300}, &held); code != http.StatusCreated {
		t.Fatalf("alice's lease: %d", code)
	}
	first, second := ask("src/auth.py"), ask("src/db.py")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := runExample(ctx, t, "mesh_agent.py", []string{"AMPFLOW_API_URL=http://" + p.api, "AMPFLOW_API_TOKEN=" + bobTok,
		"AMPFLOW_MAX_MESSAGES=2"})
	if err != nil {
		t.Fatalf("examples/mesh_agent.py: %v\n%s\ndev:\n%s", err, out, p.output())
	}
	for root, want := range map[string]string{first: "reviewed src/auth.py", second: "src/db.py is held by alice"} {
		var th struct {
			Events []struct {
				Payload struct {
					From    string `json:"from"`
					Content string `json:"content"`
				} `json:"payload"`
			} `json:"events"`
		}
		if code := alice.do("GET", "/v1/events/"+root+"/thread", nil, &th); code != http.StatusOK || len(th.Events) != 2 ||
			th.Events[1].Payload.From != "bob" || !strings.Contains(th.Events[1].Payload.Content, want) {
			t.Errorf("thread of %s: %d %+v, want bob's answer %q\nagent:\n%s", root, code, th, want, out)
		}
	}
	bob := newAPIClient(t, p.api, bobTok)
	eventually(t, 15*time.Second, "bob's lease released", func() (bool, error) {
		var list struct {
			Leases []struct {
				ResourceKey string `json:"resource_key"`
				State       string `json:"state"`
			} `json:"leases"`
		}
		code := bob.do("GET", "/v1/leases?agent_id=bob", nil, &list)
		return code == http.StatusOK && len(list.Leases) == 1 && list.Leases[0].ResourceKey == "file:src/auth.py" &&
			list.Leases[0].State == "released", fmt.Errorf("%d %+v", code, list)
	})

	// Restarted, bob finds nothing unread and answers nothing twice.
	short, stop := context.WithTimeout(context.Background(), 8*time.Second)
	defer stop()
	out, _ = runExample(short, t, "mesh_agent.py", []string{"AMPFLOW_API_URL=http://" + p.api, "AMPFLOW_API_TOKEN=" + bobTok})
	if strings.Contains(out, "<-") {
		t.Errorf("bob restarted answered again:\n%s", out)
	}
}
