package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestRunnerCost runs a task with the real Claude Code CLI as executor
// and reviewer, against loopback fakes that report known token usage,
// and checks that the task keeps what the runs cost: Claude's own
// dollars and the tokens, per role against the executor's cap, in
// GET /v1/tasks/{id} and in `ampflow task show`.
func TestRunnerCost(t *testing.T) {
	commit := "printf 'hello\\n' > hello.txt && git add hello.txt && git -c user.name=claude -c user.email=claude@example.com commit -qm 'add hello.txt'"
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"claude", []fakemodel.Turn{
			{Text: "Writing the file.", InputTokens: 3000, OutputTokens: 400,
				Tool: &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": commit, "description": "Commit hello.txt"}}},
			{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt"}`, InputTokens: 3500, OutputTokens: 100},
		}},
		reviewer: runner{"claude", []fakemodel.Turn{
			{Text: `Looks right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "hello.txt reads hello"}]}`,
				InputTokens: 2000, OutputTokens: 300},
		}},
		env: []string{"AMPFLOW_AGENTS_EXECUTOR_MODEL=claude-sonnet-4-6", "AMPFLOW_AGENTS_REVIEWER_MODEL=claude-sonnet-4-6",
			"AMPFLOW_AGENTS_EXECUTOR_MAX_COST_USD=5"},
	})
	p, api := s.p, s.api
	const id = "T-2026-882"
	api.startTask(id, lowRiskPlan(s.repo))
	st := api.waitFor(id, "done", 5*time.Minute, func(st task.State) bool {
		return st.Status.Terminal() || st.Underlying() == task.StatusAwaitingAdmin
	})
	if st.Status != task.StatusDone {
		t.Fatalf("task %s: status %s (%s), want done\n%s", id, st.Status, st.LastError, p.output())
	}

	// The state as the API serves it, as JSON.
	code, body := api.call("GET", "/v1/tasks/"+id, nil, nil)
	if code != 200 {
		t.Fatalf("GET /v1/tasks/%s: %d %s", id, code, body)
	}
	var got struct {
		CostUSD float64      `json:"cost_usd"`
		Tokens  task.Tokens  `json:"tokens"`
		Spend   []task.Spend `json:"spend"`
		Status  task.Status  `json:"status"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	// Claude Code counts its main loop's tokens as the model reported
	// them: 3000+3500 and 400+100 for the executor, 2000 and 300 for the
	// reviewer.
	if want := (task.Tokens{Input: 8500, Output: 800}); got.Tokens != want {
		t.Errorf("tokens %+v, want %+v", got.Tokens, want)
	}
	spent := map[amp.Role]task.Spend{}
	for _, s := range got.Spend {
		spent[s.Role] = s
	}
	ex, rv := spent[amp.RoleExecutor], spent[amp.RoleReviewer]
	if ex.Tokens != (task.Tokens{Input: 6500, Output: 500}) || rv.Tokens != (task.Tokens{Input: 2000, Output: 300}) {
		t.Errorf("spend %+v, want the executor's 6500/500 and the reviewer's 2000/300 tokens", got.Spend)
	}
	if ex.CapUSD != 5 || rv.CapUSD != 0 || ex.Runs != 1 || rv.Runs != 1 {
		t.Errorf("spend %+v, want one run each and the executor's $5 cap", got.Spend)
	}
	// The dollars are Claude Code's own (total_cost_usd): at least the
	// main loop's tokens at Sonnet's list price, and the roles add up.
	if floor := (8500*3.0 + 800*15.0) / 1e6; got.CostUSD < floor*0.99 || got.CostUSD > 1 {
		t.Errorf("cost_usd %g, want Claude's figure, at least $%.4f", got.CostUSD, floor)
	}
	if math.Abs(ex.CostUSD+rv.CostUSD-got.CostUSD) > 1e-9 {
		t.Errorf("the roles' $%g + $%g are not the task's $%g", ex.CostUSD, rv.CostUSD, got.CostUSD)
	}

	out := mustCLI(t, p, "", "task", "show", id)
	want := fmt.Sprintf("$%.4f (8500 input, 800 output tokens; ", got.CostUSD)
	if !strings.Contains(out, "Cost ") || !strings.Contains(out, want) || !strings.Contains(out, "of a $5.00 cap") {
		t.Errorf("task show lacks the cost %q and the executor's cap:\n%s", want, out)
	}
}
