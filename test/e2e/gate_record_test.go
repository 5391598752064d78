package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/amcp"
	"github.com/ampflow/ampflow/workflows/gate"
)

// TestRecordGateHistories records the gate histories test/replay
// replays (testdata/gate/). Skipped unless AMPFLOW_RECORD_HISTORIES=1;
// run it after a deliberate change of the gate workflow's shape, behind
// workflow.GetVersion, having renamed the files running gates may still
// have.
func TestRecordGateHistories(t *testing.T) {
	if os.Getenv("AMPFLOW_RECORD_HISTORIES") != "1" {
		t.Skip("set AMPFLOW_RECORD_HISTORIES=1 to record the replay histories")
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	// Contracts live 5s: the contract gate expires with its contract.
	p := startDev(t, t.TempDir(), append(gateEnv(hook.Listener.Addr().String()), "AMPFLOW_ADMINS=recorder", "AMPFLOW_GATE_CONTRACT_TTL=5s")...)
	tasks := dial(t, p)
	tailor := newAPIClient(t, p.api, gateTailorKey)
	out := filepath.Join("..", "replay", "testdata", "gate")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, sc := range []struct {
		name, run, option, webhook string
	}{
		{"approved_called_back", "record-gate-1", decision.OptApprove, hook.URL + "/hook"},
		{"rejected", "record-gate-2", decision.OptReject, ""},
	} {
		body := map[string]any{
			"amp_version": "1.0", "agent_id": "resume-tailor", "run_id": sc.run, "project_id": "job-search", "status": "completed",
			"summary": "Rewrote resume", "proposed_action": "Send it", "model": "claude-sonnet-4-6",
			"input_tokens": 1842, "output_tokens": 614, "cost_usd": 0.014736, "gate_required": true,
			"started_at": "2026-03-06T22:10:38Z", "completed_at": "2026-03-06T22:10:46Z",
		}
		if sc.webhook != "" {
			body["webhook_url"] = sc.webhook
		}
		var rep struct {
			GateID string `json:"gate_id"`
		}
		tailor.call("POST", "/v1/signals", body, &rep)
		wf := gate.WorkflowID(rep.GateID)
		var st gate.State
		eventually(t, 30*time.Second, "the gate's decision", func() (bool, error) {
			v, err := tasks.Temporal.QueryWorkflow(ctx, wf, "", gate.QueryState)
			if err != nil {
				return false, err
			}
			return v.Get(&st) == nil && st.Decision != nil, nil
		})
		if _, err := tasks.Decide(ctx, wf, decision.Answer{DecisionID: st.Decision.ID, Digest: st.Decision.Digest, Option: sc.option, By: "recorder", Channel: "cli"}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, wf+" closed", func() (bool, error) {
			d, err := tasks.Temporal.DescribeWorkflowExecution(ctx, wf, "")
			return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil, err
		})
		writeHistory(t, tasks, wf, filepath.Join(out, sc.name+".json"))
	}

	// A contract gate nobody answers: rejected when its contract expires
	// (Input.ExpiresAt), long before the policy's expire_after.
	d := tailor.amcpDecide(amcp.DecideRequest{Intent: "deploy to production",
		Context: &amcp.DecideContext{Parameters: map[string]any{"service": "web", "version": "1.2.3"}}})
	if d.GateID == "" {
		t.Fatalf("decide opened no gate: %+v", d)
	}
	wf := gate.WorkflowID(d.GateID)
	eventually(t, 60*time.Second, wf+" closed", func() (bool, error) {
		d, err := tasks.Temporal.DescribeWorkflowExecution(ctx, wf, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil, err
	})
	writeHistory(t, tasks, wf, filepath.Join(out, "contract_expired.json"))
}
