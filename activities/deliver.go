package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/task"
)

// Agent delivery modes.
const (
	ModePull    = "pull"    // the agent reads its inbox (CLI or HTTP API)
	ModeCommand = "command" // the worker runs the agent with the message on stdin
	ModeWebhook = "webhook" // the worker POSTs the message to the agent
)

// AgentDelivery says how one role receives its messages.
type AgentDelivery struct {
	Mode       string
	Command    []string      // argv for ModeCommand
	WebhookURL string        // for ModeWebhook
	Timeout    time.Duration // how long a command may run; zero means 30m
}

// Submitter takes an agent's reply as if the agent had sent it itself.
type Submitter interface {
	Submit(ctx context.Context, raw []byte) (task.SubmitResult, error)
}

// Delivery hands messages to the executor and the reviewer as configured.
type Delivery struct {
	Executor AgentDelivery
	Reviewer AgentDelivery
	// Submit takes what a command-mode agent prints.
	Submit Submitter
	// Refused, when set, keeps a reply the task refused (the error log).
	Refused func(raw []byte, reason string)
	HTTP    *http.Client
	Log     *slog.Logger
}

// maxReply bounds what a command-mode agent may print; more is ignored.
const maxReply = 4 << 20

// Deliver implements Deliverer.
func (d *Delivery) Deliver(ctx context.Context, in DeliverInput) (DeliverResult, error) {
	var a AgentDelivery
	switch in.Message.To {
	case amp.RoleExecutor:
		a = d.Executor
	case amp.RoleReviewer:
		a = d.Reviewer
	default:
		return DeliverResult{Mode: ModePull}, nil
	}
	if a.Mode == ModeCommand || a.Mode == ModeWebhook {
		if activity.IsActivity(ctx) && activity.GetInfo(ctx).IsLocalActivity {
			// A webhook agent may ACK from inside its handler: that
			// update waits for the workflow task a local activity holds.
			return DeliverResult{Mode: a.Mode}, temporal.NewNonRetryableApplicationError(
				a.Mode+" delivery runs in a regular activity", ErrNeedsActivity, nil)
		}
	}
	switch a.Mode {
	case ModeCommand:
		return DeliverResult{Mode: ModeCommand}, d.runCommand(ctx, a, in.Message)
	case ModeWebhook:
		return DeliverResult{Mode: ModeWebhook}, d.post(ctx, a, in.Message)
	}
	return DeliverResult{Mode: ModePull}, nil
}

func (d *Delivery) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

// runCommand runs a command-mode agent: the message JSON on stdin, reply
// records (messages or ACKs, one JSON value after another) on stdout.
func (d *Delivery) runCommand(ctx context.Context, a AgentDelivery, m amp.Message) error {
	if len(a.Command) == 0 {
		return temporal.NewNonRetryableApplicationError("agents."+string(m.To)+".command is empty", ErrDelivery, nil)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", m.MsgID, err)
	}
	cmd := exec.CommandContext(ctx, a.Command[0], a.Command[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = bytes.NewReader(in)
	var errOut limitedBuffer
	errOut.max = 16 << 10
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("starting %s agent: %w", m.To, err)
	}
	cmd.Env = append(cmd.Environ(), "AMP_MSG_ID="+m.MsgID, "AMP_TASK_ID="+m.TaskID, "AMP_ROLE="+string(m.To))
	if err := cmd.Start(); err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("starting %s agent %q: %v", m.To, a.Command[0], err), ErrDelivery, err)
	}
	// Replies are taken as the agent prints them: its ACK reaches the task
	// when it starts working, not when it is done.
	type taken struct {
		n   int
		err error
	}
	replies := make(chan taken, 1)
	go func() {
		n, err := d.takeReplies(ctx, m, io.LimitReader(stdout, maxReply))
		_, _ = io.Copy(io.Discard, stdout)
		replies <- taken{n, err}
	}()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case r := <-replies:
			waitErr := cmd.Wait()
			if r.err != nil {
				return r.err
			}
			if waitErr != nil && r.n == 0 {
				msg := fmt.Sprintf("%s agent for %s failed: %v", m.To, m.MsgID, waitErr)
				if tail := strings.TrimSpace(errOut.String()); tail != "" {
					msg += ": " + tail
				}
				return temporal.NewNonRetryableApplicationError(msg, ErrDelivery, waitErr)
			}
			return nil
		case <-tick.C:
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx, m.MsgID)
			}
		}
	}
}

// takeReplies submits each JSON value the agent prints, as it prints it;
// a reply the task refuses is logged and kept, never retried. It returns
// how many values it read.
func (d *Delivery) takeReplies(ctx context.Context, m amp.Message, r io.Reader) (int, error) {
	dec := json.NewDecoder(r)
	n := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			rest, _ := io.ReadAll(io.MultiReader(dec.Buffered(), r))
			d.refuse(rest, fmt.Sprintf("%s agent printed something that is not JSON: %v", m.To, err))
			return n, nil
		}
		n++
		if _, err := d.Submit.Submit(ctx, raw); err != nil {
			if task.ErrorCode(err) == task.CodeUnavailable {
				return n, fmt.Errorf("handing the %s's reply to task %s: %w", m.To, m.TaskID, err)
			}
			d.refuse(raw, err.Error())
		}
	}
}

func (d *Delivery) refuse(raw []byte, reason string) {
	d.log().Warn("agent reply refused", "reason", reason)
	if d.Refused != nil {
		d.Refused(raw, reason)
	}
}

// post delivers to a webhook; a server error or a network failure is
// retried by the activity's policy, a client error is final.
func (d *Delivery) post(ctx context.Context, a AgentDelivery, m amp.Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", m.MsgID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("agents.%s.webhook_url: %v", m.To, err), ErrDelivery, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-AMP-Msg-Id", m.MsgID)
	hc := d.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("posting %s to %s: %w", m.MsgID, a.WebhookURL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return fmt.Errorf("posting %s to %s: %s", m.MsgID, a.WebhookURL, resp.Status)
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("posting %s to %s: %s", m.MsgID, a.WebhookURL, resp.Status), ErrDelivery, nil)
}

// limitedBuffer keeps at most max bytes.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}
