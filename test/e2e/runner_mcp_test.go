package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// TestRunnerMCPClaude runs the real Claude Code as executor against a fake
// model that calls ampflow's MCP tool chat_send: the runner handed the CLI
// the server with the executor's own token (by reference, the token only
// in its environment), so the message is in the mesh sent as the
// executor's token name.
func TestRunnerMCPClaude(t *testing.T) {
	const subject = "mcp-from-a-runner"
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"claude", []fakemodel.Turn{
		{Text: "Telling the planner.", Tool: &fakemodel.ToolCall{Name: "mcp__ampflow__chat_send",
			Input: map[string]any{"to": "planner", "subject": subject, "content": "starting on the task"}}},
		{Text: `Done. {"criteria_met": [null], "notes": [], "summary": "told the planner"}`},
	}}})
	model, ops, planner := s.executor, s.api, s.planner
	const id = "T-2026-883"
	planner.startTask(id, lowRiskPlan(s.repo))

	var found map[string]any
	eventually(t, 3*time.Minute, "the executor's chat message in the planner's inbox", func() (bool, error) {
		var inbox struct {
			Events []map[string]any `json:"events"`
		}
		code, b := planner.call("GET", "/v1/events/inbox?direction=asc", nil, &inbox)
		if code != http.StatusOK {
			return false, fmt.Errorf("%d %s", code, b)
		}
		for _, e := range inbox.Events {
			if strings.Contains(fmt.Sprint(e), subject) {
				found = e
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events; model requests %d", len(inbox.Events), len(model.AgentRequests()))
	})
	if pl, _ := found["payload"].(map[string]any); pl["from"] != "exec" {
		t.Errorf("sent as %v, want exec: %v", pl["from"], found)
	}
	// The tool's answer reached the model: the message's id in its next request.
	eventually(t, time.Minute, "the model's second request", func() (bool, error) {
		reqs := model.AgentRequests()
		return len(reqs) >= 2 && reqs[1].Text(fmt.Sprint(found["id"])), fmt.Errorf("%d requests", len(reqs))
	})
	// The call went through the tool hook as well, as an MCP tool.
	calls := ops.toolCalls(id)
	if len(calls) != 1 || calls[0].Tool != "mcp__ampflow__chat_send" || calls[0].Kind != "mcp" || calls[0].Agent != "exec" {
		t.Errorf("the tool calls: %+v", calls)
	}
}
