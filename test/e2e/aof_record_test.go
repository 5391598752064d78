package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// TestRecordAOFHistories records the AOF task histories that
// test/replay replays (see TestReplayAOF there):
//
//	AMPFLOW_RECORD_HISTORIES=1 go test ./test/e2e/ -run TestRecordAOFHistories -count=1
func TestRecordAOFHistories(t *testing.T) {
	if os.Getenv("AMPFLOW_RECORD_HISTORIES") != "1" {
		t.Skip("set AMPFLOW_RECORD_HISTORIES=1 to record the replay histories")
	}
	p := startDev(t, t.TempDir(), "AMPFLOW_ADMINS=recorder")
	c := newAPIClient(t, p.api, "")
	tasks := dial(t, p)
	out := filepath.Join("..", "replay", "testdata", "aof")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	report := func(id, outcome string) []byte {
		return aofExample(t, "1", map[string]any{"taskId": id, "payload.outcome": outcome})
	}
	approve := func(id, option, note string) {
		// A stale run saves its move to review before it raises the
		// review: wait for both.
		var v aofTaskView
		eventually(t, 30*time.Second, id+" in review with its review raised", func() (bool, error) {
			v = c.task(id)
			return v.Status == "review" && v.Review != nil, nil
		})
		d := v.Review
		if _, err := tasks.Decide(t.Context(), d.Subject, decision.Answer{DecisionID: d.ID, Digest: d.Digest, Option: option, Note: note,
			By: "recorder", Channel: "cli"}); err != nil {
			t.Fatalf("deciding %s: %v", d.ID, err)
		}
	}
	scenarios := []struct {
		name, id string
		play     func(id string)
	}{
		{"reviewed", "TASK-2026-02-09-901", func(id string) {
			c.create(id, nil)
			c.dispatch(id, 600000)
			c.call("POST", "/v1/aof/tasks/"+id+"/heartbeat", map[string]any{"agentId": "swe-backend"}, nil)
			c.must(aofExample(t, "3", map[string]any{"taskId": id, "payload.taskId": id, "fromAgent": "swe-backend", "payload.agentId": "swe-backend"}))
			c.must(report(id, "done"))
			c.sessionEnd()
			approve(id, decision.OptApprove, "")
		}},
		{"stale_reclaim_then_done", "TASK-2026-02-09-902", func(id string) {
			c.create(id, map[string]any{"reviewRequired": false})
			c.dispatch(id, 1500)
			c.waitStatus(id, "ready", 30*time.Second)
			c.dispatch(id, 600000)
			c.must(report(id, "done"))
			c.sessionEnd()
		}},
		{"handoff_stale_sent_back", "TASK-2026-02-09-903", func(id string) {
			c.create("TASK-2026-02-09-900", nil)
			c.create(id, nil)
			c.must(aofExample(t, "5", map[string]any{"taskId": id, "payload.taskId": id, "payload.parentTaskId": "TASK-2026-02-09-900"}))
			c.must(aofExample(t, "6", map[string]any{"taskId": id, "payload.taskId": id}))
			c.dispatch(id, 1500)
			c.must(report(id, "partial"))
			approve(id, wf.OptSendBack, "finish the last 20%")
			c.waitStatus(id, "ready", 30*time.Second)
			c.dispatch(id, 600000)
			c.must(report(id, "done"))
			c.sessionEnd()
			approve(id, decision.OptApprove, "")
		}},
	}
	for _, s := range scenarios {
		s.play(s.id)
		c.waitStatus(s.id, "done", 30*time.Second)
		eventually(t, 30*time.Second, s.id+" closed", func() (bool, error) {
			d, err := tasks.Temporal.DescribeWorkflowExecution(t.Context(), wf.WorkflowID(s.id), "")
			return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil, err
		})
		writeHistory(t, tasks, wf.WorkflowID(s.id), filepath.Join(out, s.name+".json"))
	}
}

// TestRecordAOFAgentReviewHistories records the histories of an AOF task
// reviewed by the reviewer agent (aof.review: agent), rejected and then
// approved, and of its two reviews, which test/replay replays:
//
//	AMPFLOW_RECORD_HISTORIES=1 go test ./test/e2e/ -run TestRecordAOFAgentReviewHistories -count=1
func TestRecordAOFAgentReviewHistories(t *testing.T) {
	if os.Getenv("AMPFLOW_RECORD_HISTORIES") != "1" {
		t.Skip("set AMPFLOW_RECORD_HISTORIES=1 to record the replay histories")
	}
	p := startDev(t, t.TempDir(), "AMPFLOW_AOF_REVIEW=agent", "AMPFLOW_AOF_REPO="+t.TempDir(), "AMPFLOW_AOF_BRANCH=aof/users")
	c := newAPIClient(t, p.api, "")
	tasks := dial(t, p)
	const id = "TASK-2026-02-09-904"
	c.create(id, nil)
	for i, d := range []amp.Decision{amp.DecisionRejected, amp.DecisionApproved} {
		c.dispatch(id, 600000)
		c.must(aofExample(t, "1", map[string]any{"taskId": id}))
		c.sessionEnd()
		review := wf.AgentReviewID(id, i+1)
		req := c.reviewerInbox(review)
		c.submit("/v1/acks", mustJSON(t, map[string]any{"msg_id": req.MsgID, "as": "reviewer"}))
		if code, resp := c.call("POST", "/v1/heartbeats", map[string]any{"task_id": review, "from": "reviewer"}, nil); code >= 300 {
			t.Fatalf("heartbeat: %d %s", code, resp)
		}
		var issues []map[string]any
		if d == amp.DecisionRejected {
			issues = append(issues, map[string]any{"severity": "major", "file": "src/api/users.ts", "line": 12, "description": "no auth check", "suggested_fix": ""})
		}
		c.verdict(review, d, issues...)
		c.waitStatus(id, map[amp.Decision]string{amp.DecisionRejected: "ready", amp.DecisionApproved: "done"}[d], 30*time.Second)
	}
	for id, name := range map[string]string{
		wf.WorkflowID(id):       filepath.Join("aof", "agent_reviewed.json"),
		wf.AgentReviewID(id, 1): filepath.Join("aof_review", "rejected.json"),
		wf.AgentReviewID(id, 2): filepath.Join("aof_review", "approved.json"),
	} {
		eventually(t, 30*time.Second, id+" closed", func() (bool, error) {
			d, err := tasks.Temporal.DescribeWorkflowExecution(t.Context(), id, "")
			return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil, err
		})
		path := filepath.Join("..", "replay", "testdata", name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		writeHistory(t, tasks, id, path)
	}
}
