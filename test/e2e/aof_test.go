package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
)

// TestAOFExamples runs the AOF/1 document's examples 1–9 against
// `ampflow dev`, asserting each one's status, artifacts and logged events.
func TestAOFExamples(t *testing.T) {
	dataDir := t.TempDir()
	mirror := filepath.Join(dataDir, "aof")
	p := startDev(t, dataDir, "AMPFLOW_AOF_DATA_DIR="+mirror)
	c := newAPIClient(t, p.api, "")
	const (
		t57, t58, t59, t60 = "TASK-2026-02-09-057", "TASK-2026-02-09-058", "TASK-2026-02-09-059", "TASK-2026-02-09-060"
		t61, t62, t63, t64 = "TASK-2026-02-09-061", "TASK-2026-02-09-062", "TASK-2026-02-09-063", "TASK-2026-02-09-064"
	)

	t.Run("Example1CompletionDone", func(t *testing.T) {
		c := c.on(t)
		c.create(t57, nil)
		c.dispatch(t57, 600000)
		c.waitLease("aof/"+t57, "swe-backend", "active")
		out := c.must(aofExample(t, "1", nil))
		if out["changed"] != true {
			t.Errorf("report: %v", out)
		}
		var rr struct {
			Outcome string `json:"outcome"`
			AgentID string `json:"agentId"`
			Tests   struct{ Total, Passed int }
		}
		c.artifact(t57, "run_result.json", &rr)
		if rr.Outcome != "done" || rr.AgentID != "swe-backend" || rr.Tests.Total != 120 {
			t.Errorf("run_result.json %+v", rr)
		}
		if st := c.task(t57).Status; st != "in_progress" {
			t.Errorf("status %s before session_end", st)
		}
		if rec := c.lastEvent(t57, "protocol.message.received"); rec.Payload["type"] != "completion.report" || rec.Payload["payload"].(map[string]any)["outcome"] != "done" {
			t.Errorf("received %v", rec.Payload)
		}
		// The mirror holds no outputs/summary.md: the report is taken,
		// with a warning.
		if w, _ := c.lastEvent(t57, "task.completed").Payload["warnings"].([]any); len(w) != 1 || !strings.HasPrefix(w[0].(string), "payload.summaryRef: ") {
			t.Errorf("task.completed warnings %v", w)
		}
		c.sessionEnd()
		v := c.waitStatus(t57, "review", 30*time.Second)
		wantReason(t, c.lastEvent(t57, "task.transitioned"), "session_end_done")
		c.waitLease("aof/"+t57, "swe-backend", "released")
		if v.Review == nil {
			t.Fatal("no review decision")
		}
		var listed struct {
			Decisions []decision.Decision `json:"decisions"`
		}
		c.call("GET", "/v1/decisions", nil, &listed)
		if !slices.ContainsFunc(listed.Decisions, func(d decision.Decision) bool { return d.ID == v.Review.ID }) {
			t.Errorf("the review %s is not listed in GET /v1/decisions: %+v", v.Review.ID, listed)
		}
		c.decide(*v.Review, decision.OptApprove)
		c.waitStatus(t57, "done", 30*time.Second)
		last := c.lastEvent(t57, "task.transitioned")
		if last.Payload["from"] != "review" || !strings.HasPrefix(last.Payload["reason"].(string), "approve by ") {
			t.Errorf("last transition %v", last.Payload)
		}
		c.lastEvent(t57, "review.decided")
		if _, err := os.Stat(filepath.Join(mirror, "runs", t57, "run_result.json")); err != nil {
			t.Errorf("the mirror has no run_result.json: %v", err)
		}
		logs, _ := filepath.Glob(filepath.Join(mirror, "events", "*.jsonl"))
		var all []byte
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			all = append(all, b...)
		}
		if !strings.Contains(string(all), `"type":"task.completed"`) || strings.Count(string(all), `"type":"task.created","timestamp"`) < 1 ||
			!strings.Contains(string(all), `"type":"protocol.message.received"`) {
			t.Errorf("the mirror's events/ do not hold the task's events: %s", all)
		}
	})

	t.Run("Example2CompletionBlocked", func(t *testing.T) {
		c := c.on(t)
		c.create(t58, nil)
		c.dispatch(t58, 600000)
		summary := filepath.Join(mirror, "tasks", "in-progress", t58, "outputs", "summary.md")
		if err := os.MkdirAll(filepath.Dir(summary), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(summary, []byte("# Summary\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c.must(wrapContent(t, string(aofExample(t, "2", nil))))
		if w, ok := c.lastEvent(t58, "task.completed").Payload["warnings"]; ok {
			t.Errorf("warnings with the summary in place: %v", w)
		}
		if rr := c.runResult(t58); rr.Outcome != "blocked" || rr.AgentID != "swe-backend" || len(rr.Blockers) != 2 || rr.Tests.Total != 50 {
			t.Errorf("run_result.json %+v", rr)
		}
		c.sessionEnd()
		c.waitStatus(t58, "blocked", 30*time.Second)
		wantReason(t, c.lastEvent(t58, "task.transitioned"), "session_end_blocked")
		if rr := c.runResult(t58); rr.Outcome != "blocked" || len(rr.Blockers) != 2 {
			t.Errorf("run_result.json after the session's end %+v", rr)
		}
	})

	t.Run("Example3StatusProgress", func(t *testing.T) {
		c := c.on(t)
		c.create(t59, nil)
		c.dispatch(t59, 600000)
		c.must(wrapContent(t, "AOF/1 "+string(aofExample(t, "3", nil))))
		v := c.task(t59)
		want := "- 2026-02-09T21:20:00.000Z Progress: Executed 50/100 test cases | Notes: No issues found so far"
		if v.Status != "in_progress" || !slices.Equal(v.WorkLog, []string{want}) {
			t.Errorf("status %s work log %q", v.Status, v.WorkLog)
		}
		if n := c.countEvents(t59, "task.transitioned"); n != 1 {
			t.Errorf("%d transitions, want the dispatch's only", n)
		}
		rec := c.lastEvent(t59, "protocol.message.received")
		p, _ := rec.Payload["payload"].(map[string]any)
		if rec.Actor != "swe-qa" || rec.Payload["type"] != "status.update" || p["progress"] != "Executed 50/100 test cases" {
			t.Errorf("received %s %v", rec.Actor, rec.Payload)
		}
	})

	t.Run("Example4StatusTransition", func(t *testing.T) {
		c := c.on(t)
		c.create(t60, nil)
		c.dispatch(t60, 600000)
		c.must(aofExample(t, "4", nil))
		c.waitStatus(t60, "blocked", 10*time.Second)
		wantReason(t, c.lastEvent(t60, "task.transitioned"), "Test environment unreachable")
	})

	t.Run("Example5HandoffRequest", func(t *testing.T) {
		c := c.on(t)
		c.create(t61, nil)
		c.must(aofExample(t, "5", nil))
		v := c.task(t61)
		if v.ParentTaskID != t57 || v.Metadata.DelegationDepth != 1 || v.Delegation != "requested" {
			t.Errorf("child %+v", v)
		}
		var hj struct {
			ToAgent            string   `json:"toAgent"`
			AcceptanceCriteria []string `json:"acceptanceCriteria"`
		}
		c.artifact(t61, "inputs/handoff.json", &hj)
		var md string
		c.artifact(t61, "inputs/handoff.md", &md)
		if hj.ToAgent != "swe-qa" || len(hj.AcceptanceCriteria) != 3 || !strings.Contains(md, "## Acceptance Criteria\n\n- All unit tests pass\n") {
			t.Errorf("handoff.json %+v handoff.md %q", hj, md)
		}
		c.lastEvent(t61, "delegation.requested")
		c.must(aofExample(t, "5", nil)) // re-sent: the same artifacts, no second delegation
		if n := c.countEvents(t61, "delegation.requested"); n != 1 {
			t.Errorf("%d delegation.requested", n)
		}
		if _, err := os.Stat(filepath.Join(mirror, "tasks", "ready", t61+".md")); err != nil {
			t.Errorf("the mirror has no task file: %v", err)
		}
		for _, name := range []string{"handoff.json", "handoff.md"} {
			if _, err := os.Stat(filepath.Join(mirror, "tasks", "ready", t61, "inputs", name)); err != nil {
				t.Errorf("the mirror has no tasks/ready/%s/inputs/%s: %v", t61, name, err)
			}
		}
	})

	t.Run("Example6HandoffAccepted", func(t *testing.T) {
		c := c.on(t)
		c.must(aofExample(t, "6", nil))
		c.lastEvent(t61, "delegation.accepted")
		if v := c.task(t61); v.Status != "ready" || v.Delegation != "accepted" {
			t.Errorf("status %s delegation %s", v.Status, v.Delegation)
		}
	})

	t.Run("Example7HandoffRejected", func(t *testing.T) {
		c := c.on(t)
		c.create(t62, nil)
		c.must(aofExample(t, "7", nil))
		c.waitStatus(t62, "blocked", 10*time.Second)
		wantReason(t, c.lastEvent(t62, "task.transitioned"), "Insufficient context: no test plan provided")
		wantReason(t, c.lastEvent(t62, "delegation.rejected"), "Insufficient context: no test plan provided")
	})

	t.Run("Example8StaleWithResult", func(t *testing.T) {
		c := c.on(t)
		c.create(t63, nil)
		c.dispatch(t63, 2000)
		c.must(aofExample(t, "1", map[string]any{"taskId": t63, "payload.outcome": "partial"}))
		if rr := c.runResult(t63); rr.Outcome != "partial" || rr.TaskID != t63 || rr.AgentID != "swe-backend" {
			t.Errorf("run_result.json %+v", rr)
		}
		c.waitStatus(t63, "review", 30*time.Second)
		wantReason(t, c.lastEvent(t63, "task.transitioned"), "stale_heartbeat_partial")
	})

	t.Run("Example9StaleReclaim", func(t *testing.T) {
		c := c.on(t)
		c.create(t64, nil)
		c.dispatch(t64, 2000)
		c.waitStatus(t64, "ready", 30*time.Second)
		wantReason(t, c.lastEvent(t64, "task.transitioned"), "stale_heartbeat_reclaim")
		var run struct {
			Status string `json:"status"`
		}
		c.artifact(t64, "run.json", &run)
		if run.Status != "expired" {
			t.Errorf("run.json status %q, want expired", run.Status)
		}
		// The lease has the run's TTL: its own timer may free it just
		// before the reclaim releases it.
		eventually(t, 30*time.Second, "the lease of "+t64+" ended", func() (bool, error) {
			st := c.leaseState("aof/"+t64, "swe-backend")
			return st == "released" || st == "expired", nil
		})
	})

	t.Run("CLI", func(t *testing.T) {
		out, stderr, code := cli(t, p, nil, "aof", "task", "show", t61, "-o", "json")
		if code != 0 || !strings.Contains(out, `"delegationDepth":1`) {
			t.Errorf("aof task show: %d %s %s", code, out, stderr)
		}
		out, _, code = cli(t, p, nil, "aof", "task", "artifacts", t61, "inputs/handoff.md")
		if code != 0 || !strings.HasPrefix(out, "# Handoff Request\n") {
			t.Errorf("aof task artifacts: %d %q", code, out)
		}
		out, stderr, code = cli(t, p, nil, "aof", "task", "events", t61)
		if code != 0 || !strings.Contains(out, "task.created") || !strings.Contains(out, "delegation.requested") || !strings.Contains(out, "delegation.accepted") {
			t.Errorf("aof task events: %d %s %s", code, out, stderr)
		}
		out, _, code = cli(t, p, nil, "aof", "task", "events", t61, "-o", "json")
		if code != 0 || !strings.Contains(out, `"type": "delegation.requested"`) && !strings.Contains(out, `"type":"delegation.requested"`) {
			t.Errorf("aof task events -o json: %d %s", code, out)
		}
	})

	aofErrors(t, c)
}
