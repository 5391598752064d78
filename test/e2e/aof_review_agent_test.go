package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
)

// reviewerInbox waits for the review_request of taskID in the reviewer's
// inbox, read as a pull agent reads it.
func (c *apiClient) reviewerInbox(taskID string) amp.Message {
	c.t.Helper()
	var got amp.Message
	eventually(c.t, 30*time.Second, "a review_request of "+taskID+" in the reviewer's inbox", func() (bool, error) {
		var page struct {
			Messages []amp.Message `json:"messages"`
		}
		if code, resp := c.call("GET", "/v1/inbox?role=reviewer", nil, &page); code != http.StatusOK {
			c.t.Fatalf("inbox: %d %s", code, resp)
		}
		for _, m := range page.Messages {
			if m.TaskID == taskID && m.Type == amp.TypeReviewRequest {
				got = m
				return true, nil
			}
		}
		return false, nil
	})
	return got
}

// verdict sends a review_verdict in the API's short form.
func (c *apiClient) verdict(taskID string, d amp.Decision, issues ...map[string]any) {
	c.t.Helper()
	payload := map[string]any{"decision": d, "confidence": 0.9,
		"criteria_results": []map[string]any{{"criterion": "users endpoints", "passed": d != amp.DecisionRejected, "evidence": "read src/api/users.ts"}}}
	if len(issues) > 0 {
		payload["issues"] = issues
	}
	c.submit("/v1/messages", mustJSON(c.t, map[string]any{"type": "review_verdict", "task_id": taskID, "payload": payload}))
}

// TestAOFAgentReview runs aof.review: agent against `ampflow dev` with a
// pull-mode reviewer that speaks only the HTTP API: the review_request
// comes under the review's own AMP task id with records that resolve;
// a rejection sends the task back with the issues in its work log; the
// review survives a kill -9 and an approval makes the task done; a
// reviewer that does not ACK leaves the review to the admins.
func TestAOFAgentReview(t *testing.T) {
	p := startDev(t, t.TempDir(), "AMPFLOW_AOF_REVIEW=agent", "AMPFLOW_AOF_REPO="+t.TempDir(), "AMPFLOW_AOF_BRANCH=aof/users",
		"AMPFLOW_PROTOCOL_ACK_TIMEOUT_REVIEW_REQUEST=10s")
	c := newAPIClient(t, p.api, "")
	const id = "TASK-2026-02-09-090"
	round := func() {
		c.dispatch(id, 600000)
		c.must(aofExample(t, "1", map[string]any{"taskId": id}))
		c.sessionEnd()
		c.waitStatus(id, "review", 30*time.Second)
	}

	c.create(id, nil)
	round()
	var v struct {
		AgentReview struct {
			AMPTaskID string `json:"ampTaskId"`
			Round     int    `json:"round"`
			Running   bool   `json:"running"`
		} `json:"agentReview"`
		Review *decision.Decision `json:"review"`
	}
	c.call("GET", "/v1/aof/tasks/"+id, nil, &v)
	const first = "T-2026-0209090001"
	if v.AgentReview.AMPTaskID != first || !v.AgentReview.Running || v.Review != nil {
		t.Fatalf("the task in review shows %+v, review %v", v.AgentReview, v.Review)
	}
	req := c.reviewerInbox(first)
	rp := req.Payload.(*amp.ReviewRequest)
	for _, ref := range []string{rp.OriginalDispatchRef, rp.TaskResultRef} {
		var rec struct {
			Body json.RawMessage `json:"body"`
		}
		if code, resp := c.call("GET", "/v1/records/"+ref, nil, &rec); code != http.StatusOK {
			t.Errorf("the review_request's reference %s: %d %s", ref, code, resp)
		}
	}
	if !strings.Contains(rp.CoordinatorNotes, id) || !strings.Contains(rp.DiffURL, "aof/users") {
		t.Errorf("the review_request does not say what it reviews: %+v", rp)
	}
	// What the review does not expect is refused, naming why, and
	// changes nothing.
	code, resp := c.call("POST", "/v1/messages", map[string]any{"type": "review_verdict", "task_id": first, "payload": map[string]any{"decision": "maybe"}}, nil)
	if code != http.StatusBadRequest || !strings.Contains(string(resp), "payload.decision") {
		t.Errorf("an invalid verdict answered %d %s", code, resp)
	}
	var st struct {
		Status string `json:"status"`
	}
	if code, resp := c.call("GET", "/v1/tasks/"+first, nil, &st); code != http.StatusOK || st.Status != "in_review" {
		t.Errorf("GET /v1/tasks/%s: %d %s", first, code, resp)
	}
	c.submit("/v1/acks", mustJSON(t, map[string]any{"msg_id": req.MsgID, "as": "reviewer"}))
	// A second ACK record (another msg_id) is the first one again.
	if dup := c.submit("/v1/acks", mustJSON(t, amp.NewAck(amp.RoleReviewer, req, time.Now().Add(time.Second)))); !dup {
		t.Error("a second ACK of the request was not answered as a duplicate")
	}
	if code, resp := c.call("POST", "/v1/heartbeats", map[string]any{"task_id": first, "from": "reviewer", "note": "reading users.ts"}, nil); code >= 300 {
		t.Errorf("the reviewer's heartbeat answered %d %s", code, resp)
	}
	c.verdict(first, amp.DecisionRejected, map[string]any{"severity": "major", "file": "src/api/users.ts", "line": 12, "description": "no auth check", "suggested_fix": "call requireAuth"})
	tv := c.waitStatus(id, "ready", 30*time.Second)
	if n := len(tv.WorkLog); n == 0 || !strings.Contains(tv.WorkLog[n-1], "sent back by the reviewer agent ("+first+"): [major] src/api/users.ts:12 no auth check") {
		t.Errorf("work log %q", tv.WorkLog)
	}
	last := c.lastEvent(id, "task.transitioned")
	if last.Actor != "reviewer" || last.Payload["reason"] != "rejected by the reviewer agent ("+first+")" {
		t.Errorf("last transition by %s: %v", last.Actor, last.Payload)
	}
	if code, _ := c.call("POST", "/v1/acks", map[string]any{"msg_id": req.MsgID, "as": "reviewer"}, nil); code < 400 {
		t.Errorf("an ACK of a finished review answered %d", code)
	}
	late := map[string]any{"type": "review_verdict", "task_id": first, "payload": map[string]any{"decision": "approved", "confidence": 0.9,
		"criteria_results": []map[string]any{{"criterion": "users endpoints", "passed": true, "evidence": "changed my mind"}}}}
	if code, resp := c.call("POST", "/v1/messages", late, nil); code != http.StatusConflict || !strings.Contains(string(resp), "task_ended") {
		t.Errorf("a verdict on a finished review answered %d %s, want 409 task_ended", code, resp)
	}
	if code, resp := c.call("GET", "/v1/tasks/"+first, nil, &st); code != http.StatusOK || st.Status != "done" {
		t.Errorf("GET /v1/tasks/%s after the verdict: %d %s", first, code, resp)
	}

	// Round two: ampflow is killed while the review waits for the
	// verdict; after the restart the approval applies once.
	round()
	const second = "T-2026-0209090002"
	req = c.reviewerInbox(second)
	c.submit("/v1/acks", mustJSON(t, map[string]any{"msg_id": req.MsgID, "as": "reviewer"}))
	p.kill()
	p.restart()
	c.reset()
	eventually(t, 60*time.Second, second+" answers after the restart", func() (bool, error) {
		code, body, err := c.raw("GET", "/v1/tasks/"+second, nil)
		return code == http.StatusOK && strings.Contains(string(body), `"status":"in_review"`), err
	})
	c.verdict(second, amp.DecisionApproved)
	c.waitStatus(id, "done", 30*time.Second)
	if n := c.countEvents(id, "review.verdict"); n != 2 {
		t.Errorf("%d review.verdict events, want 2", n)
	}
	last = c.lastEvent(id, "task.transitioned")
	if last.Payload["reason"] != "approved by the reviewer agent ("+second+")" {
		t.Errorf("last transition %v", last.Payload)
	}

	// A reviewer that never ACKs: after protocol.ack_timeout.review_request
	// the admins get the review, saying why.
	const quiet = "TASK-2026-02-09-091"
	c.create(quiet, nil)
	c.dispatch(quiet, 600000)
	c.must(aofExample(t, "1", map[string]any{"taskId": quiet}))
	c.sessionEnd()
	eventually(t, 60*time.Second, "the admins get the review of "+quiet, func() (bool, error) {
		tv = c.task(quiet)
		return tv.Review != nil, nil
	})
	if why, _ := tv.Review.Context.Extra["reviewer_agent"].(string); !strings.Contains(why, "did not ACK") {
		t.Errorf("the admins' review says %q of the reviewer agent", why)
	}
	c.lastEvent(quiet, "review.no_verdict")
	c.decide(*tv.Review, decision.OptApprove)
	c.waitStatus(quiet, "done", 30*time.Second)

	// A coordinator or an admin cancels a review: the admins take it.
	const taken = "TASK-2026-02-09-094"
	c.create(taken, nil)
	c.dispatch(taken, 600000)
	c.must(aofExample(t, "1", map[string]any{"taskId": taken}))
	c.sessionEnd()
	c.reviewerInbox("T-2026-0209094001")
	if code, resp := c.call("POST", "/v1/tasks/T-2026-0209094001/cancel", map[string]any{"reason": "I will review it"}, nil); code != http.StatusOK {
		t.Errorf("cancelling the review: %d %s", code, resp)
	}
	eventually(t, 30*time.Second, "the admins get the review of "+taken, func() (bool, error) {
		tv = c.task(taken)
		return tv.Review != nil, nil
	})
	if why, _ := tv.Review.Context.Extra["reviewer_agent"].(string); !strings.HasPrefix(why, "the review was cancelled by ") || !strings.HasSuffix(why, ": I will review it") {
		t.Errorf("the admins' review says %q of the reviewer agent", why)
	}

	// The example AMP reviewer (examples/agent.py reviewer) reviews an
	// AOF task as it is: it follows original_dispatch_ref for the
	// acceptance criteria and approves.
	const example = "TASK-2026-02-09-092"
	c.create(example, nil)
	c.dispatch(example, 600000)
	c.must(aofExample(t, "1", map[string]any{"taskId": example}))
	c.sessionEnd()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := pythonCmd(ctx, t, "agent.py", []string{"AMPFLOW_API_URL=http://" + p.api, "AMPFLOW_API_TOKEN="}, "reviewer")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("examples/agent.py output:\n%s", out.String())
		}
	}()
	c.waitStatus(example, "done", 60*time.Second)
	if last := c.lastEvent(example, "task.transitioned"); last.Actor != "reviewer" {
		t.Errorf("the example's task was made done by %s, want the reviewer", last.Actor)
	}

	var page struct {
		Messages []amp.Message `json:"messages"`
	}
	c.call("GET", "/v1/inbox?role=reviewer", nil, &page)
	for _, m := range page.Messages {
		if strings.HasPrefix(m.TaskID, "T-2026-020909") {
			t.Errorf("the inbox still holds %s of %s", m.MsgID, m.TaskID)
		}
	}
}

// commandReviewer is a command-mode reviewer: the review_request on
// stdin, its ACK and an approving review_verdict printed as AMP records.
const commandReviewer = `import json, os, sys, time
m = json.load(sys.stdin)
assert os.environ["AMP_TASK_ID"] == m["task_id"], "AMP_TASK_ID"
now = time.time()
stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now))
ms = int(now * 1000)
print(json.dumps({"msg_id": "ack-%s-%d" % (m["task_id"], ms), "protocol_version": "AMP/1.0", "ack_of": m["msg_id"],
    "task_id": m["task_id"], "from": "reviewer", "timestamp": stamp}), flush=True)
print(json.dumps({"msg_id": "review_verdict-%s-%d" % (m["task_id"], ms + 1), "protocol_version": "AMP/1.0", "type": "review_verdict",
    "from": "reviewer", "to": "coordinator", "task_id": m["task_id"], "timestamp": stamp, "requires_ack": True, "ack_timeout_sec": 60,
    "context_ref": [m["msg_id"]], "payload": {"decision": "approved", "confidence": 0.9,
    "criteria_results": [{"criterion": "the task", "passed": True, "evidence": "read " + m["payload"]["diff_url"]}]}}))
`

// TestAOFAgentReviewCommand: a command-mode reviewer (agents.reviewer.mode
// command) is run on the review_request, and what it prints decides.
func TestAOFAgentReviewCommand(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed for the command-mode reviewer (.ci/run installs it)")
	}
	script := filepath.Join(t.TempDir(), "reviewer.py")
	writeFile(t, script, commandReviewer)
	p := startDev(t, t.TempDir(), "AMPFLOW_AOF_REVIEW=agent", "AMPFLOW_AOF_REPO="+t.TempDir(), "AMPFLOW_AOF_BRANCH=aof/users",
		"AMPFLOW_AGENTS_REVIEWER_MODE=command", "AMPFLOW_AGENTS_REVIEWER_COMMAND="+python+","+script)
	c := newAPIClient(t, p.api, "")
	const id = "TASK-2026-02-09-093"
	c.create(id, nil)
	c.dispatch(id, 600000)
	c.must(aofExample(t, "1", map[string]any{"taskId": id}))
	c.sessionEnd()
	c.waitStatus(id, "done", 60*time.Second)
	last := c.lastEvent(id, "task.transitioned")
	if last.Actor != "reviewer" || last.Payload["reason"] != "approved by the reviewer agent (T-2026-0209093001)" {
		t.Errorf("last transition by %s: %v\n%s", last.Actor, last.Payload, p.output())
	}
}
