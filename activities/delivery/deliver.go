package delivery

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
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/config/pricing"
)

// Submitter takes an agent's reply as if the agent had sent it itself.
type Submitter interface {
	Submit(ctx context.Context, raw []byte) (task.SubmitResult, error)
}

// Delivery hands messages to the executor and the reviewer as configured.
type Delivery struct {
	Executor activities.AgentDelivery
	Reviewer activities.AgentDelivery
	// Planner is the goals' planner (goals.planner), a runner; its runs
	// (Plan) are capped at PlannerMaxCostUSD (0: no cap).
	Planner           activities.AgentDelivery
	PlannerMaxCostUSD float64
	// Submit takes what a command-mode agent prints, and the replies ampflow
	// writes for a runner.
	Submit Submitter
	// Heartbeats passes a runner's signs of life to its task, and Usage
	// what each run cost.
	Heartbeats Heartbeater
	Usage      UsageRecorder
	// Pricing prices the tokens of runners whose CLI reports no dollars.
	Pricing pricing.Table
	// Metrics, when set, counts runners' tokens and dollars.
	Metrics UsageCounter
	// Accounts rest a runner's accounts at their limits and keep what
	// each spent; nil: none rests.
	Accounts *Accounts
	// Git reads a runner's result from the repository.
	Git *activities.Git
	// Pusher pushes an executor run's branch back to a repository given
	// by URL, so that any host can take the task on; nil pushes nothing.
	Pusher *activities.Pusher
	// Marks keeps the runner checkouts being removed (the SSOT); a marked
	// executor checkout is finished off before a run, never worked in.
	Marks activities.WorktreeMarks
	// Refused, when set, keeps a reply the task refused (the error log).
	Refused func(raw []byte, reason string)
	// Secrets are masked in an agent's stderr before it is logged or shown.
	Secrets *child.Scrubber
	HTTP    *http.Client
	Log     *slog.Logger
	// Now is the clock of webhook signatures; nil means time.Now.
	Now func() time.Time
	// Credentials mint each runner run its credential; without them a
	// run gets neither the tool hook nor the MCP server.
	Credentials *RunCredentials
	// APIURL is where runs reach the worker's API (the tool hook's and
	// the MCP server's).
	APIURL string
	// Egress, when set with a Bridge, gives each sandboxed run a network
	// of its own that reaches the API, its configured loopback endpoints
	// and, through the egress proxy, what Egress allows.
	Egress *Egress
	// Tools, when set, gives runners the tool policy's hook.
	Tools *ToolHook
	// MCP, when set, gives runners ampflow's MCP server.
	MCP *RunnerMCP
	// Budgets, when set, charges each runner run's cost to pricing.budgets
	// and refuses a run whose budget is spent.
	Budgets *RunnerBudgets
	// SandboxBin is the bwrap binary of sandboxed runs; empty: bwrap on
	// the worker's PATH.
	SandboxBin string
	// Slots bounds the runner runs going at once (runner.slots); nil is
	// no bound. Host names this worker in the fleet; a runner's
	// ErrNeedsActivity names it, so the task's runs come to its queue.
	Slots *Slots
	Host  string
	// Steer, when set, gives runners the messages and interrupts people
	// send their task (ampflow task say, ampflow task interrupt).
	Steer Steering
	// Transcripts, when set, keeps each runner run's transcript: its
	// events as they happen, bounded and masked (transcript.go).
	Transcripts TranscriptStore
	// transcriptFlush and transcriptLimit replace the writer's interval
	// and bound when set (the tests).
	transcriptFlush time.Duration
	transcriptLimit int
	// SandboxHide are files and directories of the worker's a sandboxed
	// run does not see beside data_dir and the worker's home: its
	// configuration file, key files, a store outside data_dir.
	SandboxHide []string
}

// maxReply bounds what a command-mode agent may print; more is ignored.
const maxReply = 4 << 20

// Deliver implements Deliverer.
func (d *Delivery) Deliver(ctx context.Context, in activities.DeliverInput) (activities.DeliverResult, error) {
	var a activities.AgentDelivery
	switch in.Message.To {
	case amp.RoleExecutor:
		a = d.Executor
	case amp.RoleReviewer:
		a = d.Reviewer
	default:
		return activities.DeliverResult{Mode: config.AgentModePull}, nil
	}
	if a.Mode == config.AgentModeCommand || a.Mode == config.AgentModeWebhook || a.Mode == config.AgentModeRunner {
		if activity.IsActivity(ctx) && activity.GetInfo(ctx).IsLocalActivity {
			// A webhook agent may ACK from inside its handler: that
			// update waits for the workflow task a local activity holds.
			// A runner's refusal names this worker's host: the task's
			// runs may go to its queue (activities.HostQueue).
			detail := activities.NeedsActivityDetail{Mode: a.Mode}
			if a.Mode == config.AgentModeRunner {
				detail.Host = d.Host
			}
			return activities.DeliverResult{Mode: a.Mode}, temporal.NewNonRetryableApplicationError(
				a.Mode+" delivery runs in a regular activity", activities.ErrNeedsActivity, nil, detail)
		}
	}
	switch a.Mode {
	case config.AgentModeCommand:
		return activities.DeliverResult{Mode: config.AgentModeCommand}, d.runCommand(ctx, a, in)
	case config.AgentModeWebhook:
		return activities.DeliverResult{Mode: config.AgentModeWebhook}, d.post(ctx, a, in.Message)
	case config.AgentModeRunner:
		return activities.DeliverResult{Mode: config.AgentModeRunner}, d.runAgent(ctx, a, in)
	}
	return activities.DeliverResult{Mode: config.AgentModePull}, nil
}

func (d *Delivery) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

// Agent environment variables, set for every command-mode agent.
const (
	EnvMsgID  = "AMP_MSG_ID"
	EnvTaskID = "AMP_TASK_ID"
	EnvRole   = "AMP_ROLE"
)

// Bounds on what is kept of an agent's stderr.
const (
	stderrKeepBytes = 16 << 10
	stderrShowLines = 20
	stderrShowBytes = 2 << 10
)

// failed is a delivery that went wrong for good: the task raises it to
// the admins at once instead of waiting for the ACK timeout.
func failed(summary, stderr string, cause error) error {
	return temporal.NewNonRetryableApplicationError(summary, activities.ErrDelivery, cause,
		activities.DeliveryFailure{Summary: summary, Stderr: stderr})
}

// runCommand runs a command-mode agent: the message JSON on stdin, reply
// records (messages or ACKs, one JSON value after another) on stdout. It
// fails when the agent cannot start, exits non-zero, exits without a
// reply, or prints a reply the task refuses.
func (d *Delivery) runCommand(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput) error {
	m := in.Message
	if len(a.Command) == 0 {
		return failed("agents."+string(m.To)+".command is empty", "", nil)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = config.DefaultAgentTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stdin, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", m.MsgID, err)
	}
	cmd := exec.CommandContext(ctx, a.Command[0], a.Command[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if cmd.Dir, err = d.Git.Local(ctx, in.Repo, true); err != nil {
		return failed(fmt.Sprintf("fetching the repository of %s: %v", m.TaskID, err), "", err)
	}
	cmd.Stdin = bytes.NewReader(stdin)
	errOut := &child.Tail{Max: stderrKeepBytes}
	cmd.Stderr = errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("starting %s agent: %w", m.To, err)
	}
	// The agent is code ampflow does not control: it sees none of the
	// worker's secrets, only what agents.<role>.env lets through.
	cmd.Env = child.Env(nil, a.Env, EnvMsgID+"="+m.MsgID, EnvTaskID+"="+m.TaskID, EnvRole+"="+string(m.To))
	if err := cmd.Start(); err != nil {
		return failed(fmt.Sprintf("the %s agent %q could not start: %v", m.To, a.Command[0], err), "", err)
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
		if err != nil {
			cancel() // a refused reply ends the delivery
		}
		_, _ = io.Copy(io.Discard, stdout)
		replies <- taken{n, err}
	}()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case r := <-replies:
			waitErr := cmd.Wait()
			stderr := d.stderrTail(errOut.String())
			var refused *refusedReply
			switch {
			case errors.As(r.err, &refused):
				return failed(refused.Error(), stderr, nil)
			case r.err != nil:
				return r.err
			case parent.Err() != nil:
				return fmt.Errorf("delivering %s to the %s: %w", m.MsgID, m.To, parent.Err())
			case errors.Is(ctx.Err(), context.DeadlineExceeded):
				return failed(fmt.Sprintf("the %s agent did not finish %s within %s (agents.%s.timeout) and was stopped", m.To, m.MsgID, task.FormatDuration(timeout), m.To), stderr, ctx.Err())
			case waitErr != nil:
				return failed(fmt.Sprintf("the %s agent %s on %s", m.To, exitText(waitErr), m.MsgID), stderr, waitErr)
			case r.n == 0:
				return failed(fmt.Sprintf("the %s agent exited without printing an ACK or a reply to %s", m.To, m.MsgID), stderr, nil)
			}
			return nil
		case <-tick.C:
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx, m.MsgID)
			}
		}
	}
}

// exitText says how a command ended: "exited with status 3".
func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() >= 0 {
			return fmt.Sprintf("exited with status %d", ee.ExitCode())
		}
		return "was killed (" + ee.String() + ")"
	}
	return "failed (" + err.Error() + ")"
}

// stderrTail is the end of an agent's stderr as admins are shown it: the
// last lines, secrets masked.
func (d *Delivery) stderrTail(s string) string {
	s = strings.TrimSpace(d.Secrets.Scrub(s))
	if len(s) > stderrShowBytes {
		s = s[len(s)-stderrShowBytes:]
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:] // drop a cut line
		}
	}
	lines := strings.Split(s, "\n")
	if len(lines) > stderrShowLines {
		lines = lines[len(lines)-stderrShowLines:]
	}
	return strings.ToValidUTF8(strings.Join(lines, "\n"), "�")
}

// refusedReply is a reply the task refused: it ends the delivery.
type refusedReply struct{ reason string }

func (r *refusedReply) Error() string { return r.reason }

// takeReplies submits each JSON value the agent prints, as it prints it.
// A reply that is not JSON, speaks as another role or for another task,
// or that the task refuses is logged and kept, and ends the delivery with
// a *refusedReply. It returns how many values it read.
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
			// What the decoder holds; the rest is not waited for.
			rest, _ := io.ReadAll(dec.Buffered())
			return n, d.refuse(rest, fmt.Sprintf("the %s agent printed something that is not JSON in reply to %s: %v", m.To, m.MsgID, err))
		}
		n++
		var who struct {
			From   amp.Role `json:"from"`
			TaskID string   `json:"task_id"`
		}
		_ = json.Unmarshal(raw, &who)
		if who.From != m.To || who.TaskID != m.TaskID {
			return n, d.refuse(raw, fmt.Sprintf("the %s agent, given %s of task %s, printed a reply from %q for task %q; it may speak only as the %s for %s",
				m.To, m.MsgID, m.TaskID, who.From, who.TaskID, m.To, m.TaskID))
		}
		if _, err := d.Submit.Submit(ctx, raw); err != nil {
			if task.ErrorCode(err) == task.CodeUnavailable {
				return n, fmt.Errorf("handing the %s's reply to task %s: %w", m.To, m.TaskID, err)
			}
			return n, d.refuse(raw, fmt.Sprintf("the task refused the %s agent's reply to %s: %s", m.To, m.MsgID, child.OneLine(err.Error())))
		}
	}
}

func (d *Delivery) refuse(raw []byte, reason string) error {
	d.log().Warn("agent reply refused", "reason", reason)
	if d.Refused != nil {
		d.Refused(raw, reason)
	}
	return &refusedReply{reason: reason}
}

// post delivers to a webhook; a server error or a network failure is
// retried by the activity's policy, a client error is final.
func (d *Delivery) post(ctx context.Context, a activities.AgentDelivery, m amp.Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", m.MsgID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("agents.%s.webhook_url: %v", m.To, err), activities.ErrDelivery, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-AMP-Msg-Id", m.MsgID)
	if a.WebhookSecret != "" {
		now := time.Now
		if d.Now != nil {
			now = d.Now
		}
		ts := strconv.FormatInt(now().Unix(), 10)
		req.Header.Set(amp.HeaderTimestamp, ts)
		req.Header.Set(amp.HeaderSignature, amp.WebhookSignature(a.WebhookSecret, ts, body))
	}
	hc := d.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	// A redirect could take the message, signed, anywhere: it is an
	// answer like any other 3xx, which fails the delivery.
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
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
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("posting %s to %s: %s", m.MsgID, a.WebhookURL, resp.Status), activities.ErrDelivery, nil)
}

// RunnerAgent implements RunnerAgents.
func (d *Delivery) RunnerAgent(role amp.Role) (activities.AgentDelivery, bool) {
	if d == nil {
		return activities.AgentDelivery{}, false
	}
	a := d.Executor
	if role == amp.RoleReviewer {
		a = d.Reviewer
	}
	return a, a.Mode == config.AgentModeRunner && a.WorkDir != ""
}
