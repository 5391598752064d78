package activities

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/task"
)

type fakeSubmitter struct {
	mu     sync.Mutex
	got    [][]byte
	refuse error
}

func (f *fakeSubmitter) Submit(_ context.Context, raw []byte) (task.SubmitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, append([]byte(nil), raw...))
	return task.SubmitResult{}, f.refuse
}

func testDispatch(t *testing.T) amp.Message {
	t.Helper()
	p := &amp.TaskDispatch{Description: "d", Repo: "/r", Branch: "feature/x", RiskLevel: amp.RiskLow,
		Subtasks: []amp.Subtask{{SubtaskID: "S1", Description: "s", EstimatedLines: 1}}, AcceptanceCriteria: []string{"c"}}
	return amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-001", time.Unix(1_800_000_000, 0), p)
}

func isNonRetryable(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.NonRetryable()
}

func TestDeliverCommand(t *testing.T) {
	m := testDispatch(t)
	ack, _ := json.Marshal(amp.NewAck(amp.RoleExecutor, m, time.Unix(1_800_000_001, 0)))

	t.Run("RepliesSubmitted", func(t *testing.T) {
		t.Setenv("AMP_TEST_REPLY", string(ack)+"\n"+string(ack))
		sub := &fakeSubmitter{}
		// The agent must see the message on stdin: it echoes its msg_id check.
		d := &Delivery{Submit: sub, Executor: AgentDelivery{Mode: ModeCommand, Command: []string{"sh", "-c",
			`grep -q "\"msg_id\":\"$AMP_MSG_ID\"" && printf '%s' "$AMP_TEST_REPLY"`}}}
		res, err := d.Deliver(context.Background(), DeliverInput{Message: m})
		if err != nil || res.Mode != ModeCommand {
			t.Fatalf("Deliver: %v, %v", res, err)
		}
		if len(sub.got) != 2 || string(sub.got[0]) != string(ack) {
			t.Errorf("submitted %q, want the ACK twice", sub.got)
		}
	})
	t.Run("RefusedReplyLogged", func(t *testing.T) {
		t.Setenv("AMP_TEST_REPLY", `{"msg_id":"nonsense"} not json`)
		sub := &fakeSubmitter{refuse: task.Errorf(task.CodeInvalid, "msg_id: malformed")}
		var refused []string
		d := &Delivery{Submit: sub, Refused: func(raw []byte, reason string) { refused = append(refused, reason) },
			Executor: AgentDelivery{Mode: ModeCommand, Command: []string{"sh", "-c", `cat >/dev/null; printf '%s' "$AMP_TEST_REPLY"`}}}
		if _, err := d.Deliver(context.Background(), DeliverInput{Message: m}); err != nil {
			t.Fatalf("a refused reply failed the delivery: %v", err)
		}
		if len(refused) != 2 {
			t.Errorf("refused %q, want the invalid record and the non-JSON tail", refused)
		}
	})
	t.Run("FailedWithoutReply", func(t *testing.T) {
		d := &Delivery{Submit: &fakeSubmitter{}, Executor: AgentDelivery{Mode: ModeCommand, Command: []string{"sh", "-c", "echo boom >&2; exit 3"}}}
		_, err := d.Deliver(context.Background(), DeliverInput{Message: m})
		if !isNonRetryable(err) {
			t.Fatalf("error %v, want a non-retryable delivery error", err)
		}
	})
	t.Run("TimeoutKillsProcessGroup", func(t *testing.T) {
		d := &Delivery{Submit: &fakeSubmitter{}, Executor: AgentDelivery{Mode: ModeCommand, Timeout: 300 * time.Millisecond,
			Command: []string{"sh", "-c", "sleep 30 & wait"}}}
		start := time.Now()
		_, err := d.Deliver(context.Background(), DeliverInput{Message: m})
		if err == nil {
			t.Fatal("a command past its timeout succeeded")
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("the agent's children outlived the timeout")
		}
	})
}

func TestDeliverWebhook(t *testing.T) {
	m := testDispatch(t)
	var got amp.Message
	status := http.StatusAccepted
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-AMP-Msg-Id") != m.MsgID {
			t.Errorf("header X-AMP-Msg-Id %q", r.Header.Get("X-AMP-Msg-Id"))
		}
		if _, err := amp.Parse(b); err != nil {
			t.Errorf("webhook got an invalid envelope: %v", err)
		}
		_ = json.Unmarshal(b, &got)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	d := &Delivery{Executor: AgentDelivery{Mode: ModeWebhook, WebhookURL: srv.URL}}
	if _, err := d.Deliver(context.Background(), DeliverInput{Message: m}); err != nil || got.MsgID != m.MsgID {
		t.Fatalf("Deliver: %v; webhook saw %q", err, got.MsgID)
	}
	status = http.StatusBadGateway
	if _, err := d.Deliver(context.Background(), DeliverInput{Message: m}); err == nil || isNonRetryable(err) {
		t.Errorf("a 502 gave %v, want a retryable error", err)
	}
	status = http.StatusNotFound
	if _, err := d.Deliver(context.Background(), DeliverInput{Message: m}); !isNonRetryable(err) {
		t.Errorf("a 404 gave %v, want a non-retryable error", err)
	}
}

func TestDeliverPull(t *testing.T) {
	d := &Delivery{}
	res, err := d.Deliver(context.Background(), DeliverInput{Message: testDispatch(t)})
	if err != nil || res.Mode != ModePull {
		t.Errorf("pull mode: %v %v", res, err)
	}
}

// TestDeliverCommandStreamsReplies checks that an agent's first reply (its
// ACK) reaches the task while the agent still works.
func TestDeliverCommandStreamsReplies(t *testing.T) {
	m := testDispatch(t)
	ack, _ := json.Marshal(amp.NewAck(amp.RoleExecutor, m, time.Unix(1_800_000_001, 0)))
	t.Setenv("AMP_TEST_REPLY", string(ack))
	marker := t.TempDir() + "/go-on"
	t.Setenv("AMP_TEST_MARKER", marker)
	sub := &fakeSubmitter{}
	d := &Delivery{Submit: sub, Executor: AgentDelivery{Mode: ModeCommand, Command: []string{"sh", "-c",
		`cat >/dev/null; printf '%s\n' "$AMP_TEST_REPLY"; while [ ! -e "$AMP_TEST_MARKER" ]; do sleep 0.05; done`}}}
	errc := make(chan error, 1)
	go func() { _, err := d.Deliver(context.Background(), DeliverInput{Message: m}); errc <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sub.mu.Lock()
		n := len(sub.got)
		sub.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ACK did not reach the task while the agent was running")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Deliver: %v", err)
	}
}

// TestDeliverLocal checks what a delivery tried as a local activity does:
// command-mode and webhook agents are refused with ErrNeedsActivity, and
// nothing is started or posted; pull mode is done.
func TestDeliverLocal(t *testing.T) {
	m := testDispatch(t)
	started := filepath.Join(t.TempDir(), "started")
	posted := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		posted <- struct{}{}
	}))
	defer srv.Close()
	var s testsuite.WorkflowTestSuite

	d := &Delivery{Executor: AgentDelivery{Mode: ModeCommand, Command: []string{"touch", started}}}
	_, err := s.NewTestActivityEnvironment().ExecuteLocalActivity(d.Deliver, DeliverInput{Message: m})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrNeedsActivity || !app.NonRetryable() {
		t.Fatalf("command mode in a local activity: %v, want a non-retryable %s", err, ErrNeedsActivity)
	}
	if _, err := os.Stat(started); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agent was started in a local activity (stat: %v)", err)
	}

	d = &Delivery{Executor: AgentDelivery{Mode: ModeWebhook, WebhookURL: srv.URL}}
	_, err = s.NewTestActivityEnvironment().ExecuteLocalActivity(d.Deliver, DeliverInput{Message: m})
	if !errors.As(err, &app) || app.Type() != ErrNeedsActivity {
		t.Fatalf("webhook in a local activity: %v, want %s", err, ErrNeedsActivity)
	}
	select {
	case <-posted:
		t.Error("the webhook was posted from a local activity")
	default:
	}

	d = &Delivery{}
	if _, err := s.NewTestActivityEnvironment().ExecuteLocalActivity(d.Deliver, DeliverInput{Message: m}); err != nil {
		t.Fatalf("pull mode in a local activity: %v", err)
	}
}
