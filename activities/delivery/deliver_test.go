package delivery

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
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

// deliveryFailure delivers and returns the failure it must end with.
func deliveryFailure(t *testing.T, d *Delivery, in activities.DeliverInput) activities.DeliveryFailure {
	t.Helper()
	_, err := d.Deliver(context.Background(), in)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrDelivery || !app.NonRetryable() {
		t.Fatalf("Deliver: %v, want a non-retryable %s", err, activities.ErrDelivery)
	}
	var f activities.DeliveryFailure
	if err := app.Details(&f); err != nil {
		t.Fatalf("failure details: %v", err)
	}
	if f.Summary != app.Message() {
		t.Errorf("summary %q, message %q", f.Summary, app.Message())
	}
	return f
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
		d := &Delivery{Submit: sub, Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Env: []string{"AMP_TEST_REPLY"}, Command: []string{"sh", "-c",
			`grep -q "\"msg_id\":\"$AMP_MSG_ID\"" && printf '%s' "$AMP_TEST_REPLY"`}}}
		res, err := d.Deliver(context.Background(), activities.DeliverInput{Message: m})
		if err != nil || res.Mode != config.AgentModeCommand {
			t.Fatalf("Deliver: %v, %v", res, err)
		}
		if len(sub.got) != 2 || string(sub.got[0]) != string(ack) {
			t.Errorf("submitted %q, want the ACK twice", sub.got)
		}
	})
	t.Run("NotJSONEndsDelivery", func(t *testing.T) {
		t.Setenv("AMP_TEST_REPLY", string(ack)+` not json`)
		sub := &fakeSubmitter{}
		var refused []string
		d := &Delivery{Submit: sub, Refused: func(raw []byte, reason string) { refused = append(refused, reason) },
			Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Env: []string{"AMP_TEST_REPLY"},
				Command: []string{"sh", "-c", `cat >/dev/null; printf '%s' "$AMP_TEST_REPLY"; sleep 30`}}}
		f := deliveryFailure(t, d, activities.DeliverInput{Message: m})
		if len(sub.got) != 1 || len(refused) != 1 || !strings.Contains(f.Summary, "not JSON") {
			t.Errorf("submitted %d, refused %q, failure %+v; want the ACK taken, then the rest refused", len(sub.got), refused, f)
		}
	})
	t.Run("RefusedByTask", func(t *testing.T) {
		t.Setenv("AMP_TEST_REPLY", string(ack))
		sub := &fakeSubmitter{refuse: task.Errorf(task.CodeInvalid, "msg_id: malformed")}
		d := &Delivery{Submit: sub, Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Env: []string{"AMP_TEST_REPLY"},
			Command: []string{"sh", "-c", `cat >/dev/null; printf '%s' "$AMP_TEST_REPLY"`}}}
		f := deliveryFailure(t, d, activities.DeliverInput{Message: m})
		if !strings.Contains(f.Summary, "msg_id: malformed") {
			t.Errorf("failure %+v does not say why the task refused the reply", f)
		}
	})
	// An agent speaks only as the role it was delivered to, for the task
	// it was delivered for.
	t.Run("WrongRoleOrTask", func(t *testing.T) {
		asReviewer := amp.NewAck(amp.RoleReviewer, m, time.Unix(1_800_000_001, 0))
		otherTask := amp.NewAck(amp.RoleExecutor, m, time.Unix(1_800_000_001, 0))
		otherTask.TaskID = "T-2026-999"
		for name, a := range map[string]amp.Ack{"Role": asReviewer, "Task": otherTask} {
			t.Run(name, func(t *testing.T) {
				b, _ := json.Marshal(a)
				t.Setenv("AMP_TEST_REPLY", string(b))
				sub := &fakeSubmitter{}
				var refused [][]byte
				d := &Delivery{Submit: sub, Refused: func(raw []byte, _ string) { refused = append(refused, raw) },
					Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Env: []string{"AMP_TEST_REPLY"},
						Command: []string{"sh", "-c", `cat >/dev/null; printf '%s' "$AMP_TEST_REPLY"; sleep 30`}}}
				start := time.Now()
				f := deliveryFailure(t, d, activities.DeliverInput{Message: m})
				if len(sub.got) != 0 {
					t.Errorf("the reply reached the task: %s", sub.got)
				}
				if len(refused) != 1 || !strings.Contains(f.Summary, "may speak only as the executor for T-2026-001") {
					t.Errorf("refused %d, failure %+v", len(refused), f)
				}
				if time.Since(start) > 10*time.Second {
					t.Error("the agent was not stopped")
				}
			})
		}
	})
	t.Run("FailedWithoutReply", func(t *testing.T) {
		d := &Delivery{Submit: &fakeSubmitter{}, Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Command: []string{"sh", "-c",
			"for i in $(seq 1 50); do echo \"noise $i\" >&2; done; echo boom >&2; exit 3"}}}
		f := deliveryFailure(t, d, activities.DeliverInput{Message: m})
		if !strings.Contains(f.Summary, "exited with status 3") || strings.Contains(f.Summary, "\n") {
			t.Errorf("summary %q", f.Summary)
		}
		if !strings.HasSuffix(f.Stderr, "noise 50\nboom") || strings.Count(f.Stderr, "\n") != stderrShowLines-1 {
			t.Errorf("stderr %q, want its last %d lines", f.Stderr, stderrShowLines)
		}
	})
	t.Run("ExitZeroWithoutReply", func(t *testing.T) {
		d := &Delivery{Submit: &fakeSubmitter{}, Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Command: []string{"sh", "-c", "cat >/dev/null"}}}
		if f := deliveryFailure(t, d, activities.DeliverInput{Message: m}); !strings.Contains(f.Summary, "without printing an ACK or a reply") {
			t.Errorf("summary %q", f.Summary)
		}
	})
	t.Run("CannotStart", func(t *testing.T) {
		d := &Delivery{Submit: &fakeSubmitter{}, Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Command: []string{"/nonexistent/agent"}}}
		if f := deliveryFailure(t, d, activities.DeliverInput{Message: m}); !strings.Contains(f.Summary, "could not start") {
			t.Errorf("summary %q", f.Summary)
		}
	})
	// The agent sees none of the worker's secrets, runs in the task's
	// repository, and what it prints on stderr is shown with secrets masked.
	t.Run("SeesNoSecrets", func(t *testing.T) {
		t.Setenv("AMPFLOW_AUTH_TOKENS", "tok-parent-s3cr3t:admin:ops")
		t.Setenv("AMPFLOW_TEMPORAL_API_KEY", "key-parent-s3cr3t")
		t.Setenv("AMPFLOW_AUTH_DECISION_KEY", "dkey-parent-s3cr3t")
		t.Setenv("AMPFLOW_API_TOKEN", "api-parent-s3cr3t")
		t.Setenv("LEAKY", "tok-parent-s3cr3t")
		repo := t.TempDir()
		out := filepath.Join(t.TempDir(), "env")
		// Even named in the allow list, ampflow's own settings stay behind.
		d := &Delivery{Submit: &fakeSubmitter{}, Secrets: child.NewScrubber([]string{"tok-parent-s3cr3t", "key-parent-s3cr3t"}),
			Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Env: []string{"LEAKY", "OUT=" + out,
				"AMPFLOW_AUTH_TOKENS", "AMPFLOW_TEMPORAL_API_KEY", "AMPFLOW_AUTH_DECISION_KEY", "AMPFLOW_API_TOKEN"},
				Command: []string{"sh", "-c", `env > "$OUT"; echo "cwd=$(pwd)" >> "$OUT"; echo "token is $LEAKY" >&2; exit 1`}}}
		f := deliveryFailure(t, d, activities.DeliverInput{Message: m, Repo: repo})
		env, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"AMPFLOW_", "key-parent-s3cr3t", "dkey-parent-s3cr3t", "api-parent-s3cr3t"} {
			if strings.Contains(string(env), bad) {
				t.Errorf("the agent saw %s:\n%s", bad, env)
			}
		}
		for _, want := range []string{"PATH=", "AMP_ROLE=executor", "AMP_TASK_ID=T-2026-001", "AMP_MSG_ID=" + m.MsgID, "cwd=" + repo} {
			if !strings.Contains(string(env), want) {
				t.Errorf("the agent's environment lacks %s:\n%s", want, env)
			}
		}
		if f.Stderr != "token is "+child.ScrubMask {
			t.Errorf("stderr %q, want the secret masked", f.Stderr)
		}
	})
	t.Run("TimeoutKillsProcessGroup", func(t *testing.T) {
		d := &Delivery{Submit: &fakeSubmitter{}, Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Timeout: 300 * time.Millisecond,
			Command: []string{"sh", "-c", "sleep 30 & wait"}}}
		start := time.Now()
		_, err := d.Deliver(context.Background(), activities.DeliverInput{Message: m})
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
	d := &Delivery{Executor: activities.AgentDelivery{Mode: config.AgentModeWebhook, WebhookURL: srv.URL}}
	if _, err := d.Deliver(context.Background(), activities.DeliverInput{Message: m}); err != nil || got.MsgID != m.MsgID {
		t.Fatalf("Deliver: %v; webhook saw %q", err, got.MsgID)
	}
	status = http.StatusBadGateway
	if _, err := d.Deliver(context.Background(), activities.DeliverInput{Message: m}); err == nil || isNonRetryable(err) {
		t.Errorf("a 502 gave %v, want a retryable error", err)
	}
	status = http.StatusNotFound
	if _, err := d.Deliver(context.Background(), activities.DeliverInput{Message: m}); !isNonRetryable(err) {
		t.Errorf("a 404 gave %v, want a non-retryable error", err)
	}
}

// TestDeliverWebhookSigned checks the signature the way an agent's
// webhook would: its own HMAC of "timestamp.body" with the shared secret.
func TestDeliverWebhookSigned(t *testing.T) {
	m := testDispatch(t)
	const secret = "whsec-test"
	at := time.Unix(1_800_000_123, 0)
	var ts, sig string
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		ts, sig = r.Header.Get("X-AMP-Timestamp"), r.Header.Get("X-AMP-Signature")
	}))
	defer srv.Close()
	d := &Delivery{Now: func() time.Time { return at },
		Executor: activities.AgentDelivery{Mode: config.AgentModeWebhook, WebhookURL: srv.URL, WebhookSecret: secret}}
	if _, err := d.Deliver(context.Background(), activities.DeliverInput{Message: m}); err != nil {
		t.Fatal(err)
	}
	if ts != "1800000123" {
		t.Errorf("X-AMP-Timestamp = %q, want the Unix seconds of the delivery", ts)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	if want := "v1=" + hex.EncodeToString(mac.Sum(nil)); sig != want {
		t.Errorf("X-AMP-Signature = %q, want %q", sig, want)
	}
	// Another secret, or another body, does not verify.
	other := hmac.New(sha256.New, []byte("not-the-secret"))
	other.Write([]byte(ts + "." + string(body)))
	if sig == "v1="+hex.EncodeToString(other.Sum(nil)) {
		t.Error("the signature does not depend on the secret")
	}
}

func TestDeliverPull(t *testing.T) {
	d := &Delivery{}
	res, err := d.Deliver(context.Background(), activities.DeliverInput{Message: testDispatch(t)})
	if err != nil || res.Mode != config.AgentModePull {
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
	d := &Delivery{Submit: sub, Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Env: []string{"AMP_TEST_REPLY", "AMP_TEST_MARKER"}, Command: []string{"sh", "-c",
		`cat >/dev/null; printf '%s\n' "$AMP_TEST_REPLY"; while [ ! -e "$AMP_TEST_MARKER" ]; do sleep 0.05; done`}}}
	errc := make(chan error, 1)
	go func() { _, err := d.Deliver(context.Background(), activities.DeliverInput{Message: m}); errc <- err }()
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

	d := &Delivery{Executor: activities.AgentDelivery{Mode: config.AgentModeCommand, Command: []string{"touch", started}}}
	_, err := s.NewTestActivityEnvironment().ExecuteLocalActivity(d.Deliver, activities.DeliverInput{Message: m})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrNeedsActivity || !app.NonRetryable() {
		t.Fatalf("command mode in a local activity: %v, want a non-retryable %s", err, activities.ErrNeedsActivity)
	}
	if _, err := os.Stat(started); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agent was started in a local activity (stat: %v)", err)
	}

	d = &Delivery{Executor: activities.AgentDelivery{Mode: config.AgentModeWebhook, WebhookURL: srv.URL}}
	_, err = s.NewTestActivityEnvironment().ExecuteLocalActivity(d.Deliver, activities.DeliverInput{Message: m})
	if !errors.As(err, &app) || app.Type() != activities.ErrNeedsActivity {
		t.Fatalf("webhook in a local activity: %v, want %s", err, activities.ErrNeedsActivity)
	}
	select {
	case <-posted:
		t.Error("the webhook was posted from a local activity")
	default:
	}

	d = &Delivery{}
	if _, err := s.NewTestActivityEnvironment().ExecuteLocalActivity(d.Deliver, activities.DeliverInput{Message: m}); err != nil {
		t.Fatalf("pull mode in a local activity: %v", err)
	}
}

// TestDeliverWebhookNoRedirect: an agent's webhook that redirects fails
// the delivery; the message is never sent where the redirect points.
func TestDeliverWebhookNoRedirect(t *testing.T) {
	m := testDispatch(t)
	elsewhere := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere++
		w.WriteHeader(http.StatusAccepted)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL+"/collect", http.StatusTemporaryRedirect))
	defer srv.Close()
	d := &Delivery{Executor: activities.AgentDelivery{Mode: config.AgentModeWebhook, WebhookURL: srv.URL}}
	if _, err := d.Deliver(context.Background(), activities.DeliverInput{Message: m}); !isNonRetryable(err) {
		t.Errorf("a redirect gave %v, want a non-retryable error", err)
	}
	if elsewhere != 0 {
		t.Errorf("the message followed the redirect %d times", elsewhere)
	}
}
