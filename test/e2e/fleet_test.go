package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/fleet"
)

// TestRunnerSlots: a worker with one runner slot and two tasks. The
// second task's executor waits in the queue while the first one's Codex
// runs, `GET /v1/fleet` shows one run and one queued, the waiting task's
// timeline says so, the model never sees the two runs at once, and both
// tasks end done.
func TestRunnerSlots(t *testing.T) {
	plan := func(name string) amp.TaskDispatch {
		p := lowRiskPlan("")
		p.Description, p.Branch = "Add the greeting "+name, "feature/slot-"+name
		return p
	}
	approve := `Looks right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "hello.txt reads hello"}]}`
	commit := codexCommit("hello", "add hello.txt")
	slow := commit
	slow.Tool = &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "sleep 8 && " + commit.Tool.Input.(map[string]any)["cmd"].(string)}}
	slow.For, commit.For = "greeting one", "greeting two"
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"codex", []fakemodel.Turn{
			slow,
			{For: "greeting one", Text: `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt"}`},
			commit,
			{For: "greeting two", Text: `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt"}`},
		}},
		reviewer: runner{"claude", []fakemodel.Turn{{For: "greeting one", Text: approve}, {For: "greeting two", Text: approve}}},
		env:      []string{"AMPFLOW_RUNNER_SLOTS=1", "AMPFLOW_RUNNER_HOST=slot-host"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dev's output:\n%s", s.p.output())
		}
	})
	one, two := plan("one"), plan("two")
	one.Repo, two.Repo = s.repo, s.repo
	git(t, s.repo, "branch", one.Branch)
	git(t, s.repo, "branch", two.Branch)
	s.api.startTask("T-2026-701", one)
	var f fleet.Response
	eventually(t, 2*time.Minute, "the first run holds the slot", func() (bool, error) {
		code, body := s.api.call("GET", "/v1/fleet", nil, &f)
		return len(f.Hosts) == 1 && f.Hosts[0].InUse == 1, fmt.Errorf("GET /v1/fleet: %d %s", code, body)
	})
	s.api.startTask("T-2026-702", two)
	eventually(t, time.Minute, "the second run queued behind the first", func() (bool, error) {
		s.api.call("GET", "/v1/fleet", nil, &f)
		h := f.Hosts[0]
		return len(h.Queue) == 1 && h.Queue[0].TaskID == "T-2026-702" && h.Queue[0].Role == amp.RoleExecutor &&
			len(h.Running) == 1 && h.Running[0].TaskID == "T-2026-701" && h.Running[0].Role == amp.RoleExecutor, fmt.Errorf("fleet host %+v", h)
	})
	if h := f.Hosts[0]; h.Host != "slot-host" || h.Slots != 1 || !h.Alive || h.Running[0].Runner != "codex" || h.Running[0].Role != amp.RoleExecutor {
		t.Errorf("fleet host = %+v", h)
	}
	if out, errOut, code := cli(t, s.p, nil, "fleet"); code != 0 || !strings.Contains(out, "slot-host") || !strings.Contains(out, "queued #1") {
		t.Errorf("ampflow fleet: exit %d %s\n%s", code, errOut, out)
	}

	for _, id := range []string{"T-2026-701", "T-2026-702"} {
		if st := s.ended(id); st.Status != task.StatusDone {
			t.Fatalf("task %s: status %s (%s), want done\n%s", id, st.Status, st.LastError, s.p.output())
		}
	}
	st := s.api.state("T-2026-702")
	if !slices.ContainsFunc(st.Timeline, func(e task.TimelineEntry) bool {
		return strings.Contains(e.Note, "waiting for a runner slot on slot-host")
	}) {
		t.Errorf("the queued task's timeline does not say it waited for a slot: %+v", st.Timeline)
	}
	// One slot: every model request of the first executor run comes
	// before the first of the second's.
	var lastOne, firstTwo = -1, -1
	for i, r := range s.executor.AgentRequests() {
		switch {
		case r.Text("greeting one"):
			lastOne = i
		case r.Text("greeting two") && firstTwo < 0:
			firstTwo = i
		}
	}
	if lastOne < 0 || firstTwo < 0 || firstTwo < lastOne {
		t.Errorf("executor requests: the first run's last at %d, the second's first at %d: the runs overlapped", lastOne, firstTwo)
	}
}
