package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// Heartbeater passes a runner's sign of life to its task.
type Heartbeater interface {
	Heartbeat(ctx context.Context, taskID string, in task.HeartbeatInput) error
}

// heartbeatEvery throttles the heartbeats a runner's events send the task.
const heartbeatEvery = 15 * time.Second

// Bounds on what a runner's task_result carries.
const (
	maxWorkLog    = 200
	maxWorkDetail = 300
)

// runState is what one runner delivery keeps between its events.
type runState struct {
	d        *Delivery
	a        activities.AgentDelivery
	ctx      context.Context
	m        amp.Message
	acked    bool
	lastBeat time.Time
	session  string
	workLog  []amp.WorkLogEntry
	// runs counts the CLI runs of this delivery; totals are the last
	// running totals of sessions that report them (Codex).
	runs int
	// in names the repository's local git directory; repo is the
	// repository as the plan names it, which budgets are kept by.
	in     activities.DeliverInput
	repo   string
	totals map[string]task.UsageInput
	// meter is the run's model relays' count, nil without relays.
	meter *runner.Meter
	// slot is the run's place in the worker's slots, its step and cost
	// the fleet view shows.
	slot *SlotRun
	cost float64
	// steer is the delivery's messages and interrupts; nil without a
	// store.
	steer *steer
	// account is the runner's account the run uses, empty without
	// accounts; limit is what its last run's usage or rate limit did.
	account string
	limit   *accountLimit
	// end stops the run once the task says it has ended (an ACK it
	// refuses as task_ended); ended is that refusal.
	end   context.CancelFunc
	ended error
	// tw writes the current run's transcript; nil without a store.
	tw *transcript
	// calls are the commands of shell tool calls by call id, and failed
	// those that exited non-zero, for the result's summary.
	calls  map[string]string
	failed []failedCommand
}

// failedCommand is a command of the agent's that exited non-zero.
type failedCommand struct {
	command string
	code    int
}

// runAgent runs a runner-mode agent on a message: in the task's worktree
// for the executor, in a detached worktree at the result's commit for the
// reviewer. The CLI's first event ACKs the message, later ones are
// heartbeats; when it is done, ampflow writes the reply from git and the
// CLI's final report, and submits it as the agent.
func (d *Delivery) runAgent(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput) error {
	m := in.Message
	if a.WorkDir == "" {
		return failed("the worker has no data_dir for runner worktrees", "", nil)
	}
	if in.Repo == "" {
		return failed(fmt.Sprintf("%s names no repository for the %s runner", m.MsgID, m.To), "", nil)
	}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		d.noteRetry(ctx, a, m, info.Attempt)
		// Until the CLI's pid file names it, the run is known by this
		// record: a worker that starts after this one died sees it.
		forget, err := runner.NoteAttempt(activities.PIDDir(a.WorkDir), &runner.RunOwner{TaskID: m.TaskID, MsgID: m.MsgID, Role: string(m.To),
			WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID, ActivityID: info.ActivityID})
		if err != nil {
			d.logger().Warn("a run's attempt record", "task", m.TaskID, "msg_id", m.MsgID, "error", err)
		}
		defer forget()
		// The worker is alive through the whole attempt, whatever it
		// waits on (a fetch, a checkout, the CLI): a dead one is noticed
		// after the heartbeat timeout, a live one never is.
		defer keepAlive(ctx, m.MsgID)()
	}
	acc, err := d.takeAccount(ctx, a, m)
	if err != nil {
		return err
	}
	slot, release, err := d.takeSlot(ctx, a, in)
	if err != nil {
		return fmt.Errorf("waiting for a runner slot for %s: %w", m.MsgID, err)
	}
	defer release()
	fresh := rehomed(ctx, in)
	if fresh {
		if err := d.leaveStaleWorktree(ctx, a, in); err != nil {
			return failed(fmt.Sprintf("removing the %s's old checkout of %s on %s: %v", m.To, m.TaskID, d.host(), err), "", err)
		}
	} else {
		in.Rehome = nil
	}
	for n := 0; ; n++ {
		err := d.runAccount(ctx, a, in, slot, acc, fresh)
		var over *failedOver
		if !errors.As(err, &over) {
			return err
		}
		if n >= maxFailovers*len(a.Accounts) {
			f := activities.DeliveryFailure{Class: string(runner.FailureRateLimit), ResetAt: time.Now().Add(DefaultAccountRest),
				Summary: fmt.Sprintf("the %s runner (%s) went through its accounts %d times on %s: %s", m.To, a.Runner, maxFailovers, m.MsgID, over.note)}
			return temporal.NewNonRetryableApplicationError(f.Summary, activities.ErrRateLimited, nil, f)
		}
		// A CLI keeps its sessions in its home: an account that moves it
		// starts a new session, primed with the delivery's prompt.
		fresh = !keepsSessions(*acc) || !keepsSessions(over.next)
		acc = &over.next
	}
}

// runAccount is one run of a runner's delivery on one of its accounts
// (nil: none configured); fresh starts a new session. A run that ends at
// a usage or rate limit while another account is free returns a
// *failedOver.
func (d *Delivery) runAccount(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput, slot *SlotRun, acc *config.Account, fresh bool) error {
	m := in.Message
	repo := in.Repo
	local, err := d.Git.Local(ctx, repo, true)
	if err != nil {
		return failed(fmt.Sprintf("fetching the repository of %s: %v", m.TaskID, err), "", err)
	}
	in.Repo = local
	if amp.RepoIsURL(repo) && m.To == amp.RoleExecutor {
		// The branch as the last host to run the task pushed it.
		if err := d.Git.TakeBranch(ctx, local, in.Branch); err != nil {
			return failed(fmt.Sprintf("fetching the branch of %s: %v", m.TaskID, err), "", err)
		}
	}
	dir, err := d.prepareWorktree(ctx, a, in)
	if err != nil {
		return failed(fmt.Sprintf("preparing the %s's worktree for %s: %v", m.To, m.TaskID, err), "", err)
	}
	prompt, system, err := runnerPrompt(in)
	if err != nil {
		return failed(err.Error(), "", err)
	}
	if in.Rehome != nil {
		prompt = d.rehomePrompt(ctx, in) + prompt
	}
	ctx, end := context.WithCancel(ctx)
	defer end()
	st := &runState{d: d, a: a, ctx: ctx, end: end, m: m, in: in, repo: repo, totals: sessionTotals(in.Sessions), slot: slot,
		steer: d.steering(ctx, m)}
	if !fresh {
		st.session = d.loadSession(a, m)
	}
	var accEnv, accSecrets []string
	if acc != nil {
		st.account = acc.Name
		accEnv, accSecrets = accountEnv(*acc, nil)
		d.Slots.NoteAccount(slot, acc.Name)
	}
	spec := runner.Spec{
		Runner: a.Runner, Command: a.Command, Model: a.Model, Dir: dir,
		Prompt: prompt, SystemPrompt: system, SessionID: st.session,
		Env:         child.Env(nil, a.Env, append(accEnv, EnvMsgID+"="+m.MsgID, EnvTaskID+"="+m.TaskID, EnvRole+"="+string(m.To))...),
		Timeout:     a.Timeout,
		IdleTimeout: a.IdleTimeout,
		PriceUSD:    func(u runner.Usage) float64 { return d.Pricing.Price(a.Model, u.InputTokens, u.OutputTokens) },
		PIDDir:      activities.PIDDir(a.WorkDir),
	}
	spec.Secrets = envSecrets(spec.Env)
	for _, v := range accSecrets {
		if !slices.Contains(spec.Secrets, v) {
			spec.Secrets = append(spec.Secrets, v)
		}
	}
	credential, err := d.Credentials.Mint(m.To, m.TaskID, a.Timeout)
	if err != nil {
		return failed(fmt.Sprintf("making the %s run's credential: %v", m.To, err), "", err)
	}
	if d.Tools.apply(&spec, m.TaskID, credential) {
		parkable(&spec, a, m)
	}
	if in.Resume != nil && !fresh {
		resumed(&spec, in.Resume)
		if in.Resume.Interrupted {
			if p := st.steer.queued(ctx); p != "" {
				spec.Prompt = p
			}
		}
		st.session = spec.SessionID
	}
	spec.Owner = &runner.RunOwner{TaskID: m.TaskID, MsgID: m.MsgID, Role: string(m.To), Session: st.session}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		spec.Owner.WorkflowID, spec.Owner.RunID, spec.Owner.ActivityID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID, info.ActivityID
	}
	if _, err := d.MCP.apply(&spec, m.To, credential, a.WorkDir); err != nil {
		return failed(fmt.Sprintf("giving the %s runner ampflow's MCP server: %v", a.Runner, err), "", err)
	}
	if a.Sandbox {
		if err := d.sandbox(ctx, a, m.To, m.TaskID, in.Repo, dir, &spec); err != nil {
			return failed(fmt.Sprintf("confining the %s runner (agents.%s.sandbox): %v", a.Runner, m.To, err), "", err)
		}
		netw, err := d.network(taskRun{workDir: a.WorkDir, taskID: m.TaskID, role: m.To}, credential, &spec)
		if err != nil {
			return failed(fmt.Sprintf("giving the %s runner its network (agents.%s.sandbox): %v", a.Runner, m.To, err), "", err)
		}
		defer netw.Close()
		if netw != nil {
			st.meter = netw.meter
		}
	}
	out, err := st.run(spec)
	for turns := 0; ; turns++ {
		if m.To == amp.RoleExecutor {
			// What the run left, so a later salvage counts only its own
			// deletions as the agent's.
			if nerr := runner.NoteRunEnd(context.WithoutCancel(ctx), dir, m.MsgID); nerr != nil && d.Log != nil {
				d.Log.Warn("noting the end of a run", "task", m.TaskID, "msg_id", m.MsgID, "error", nerr)
			}
		}
		if out.SessionID != "" {
			st.session = out.SessionID
			d.saveSession(a, m, out.SessionID)
		}
		if st.ended != nil {
			return failed(fmt.Sprintf("the %s's run on %s stopped: %v", m.To, m.MsgID, st.ended), "", st.ended)
		}
		if err != nil {
			if r := d.budgetRefused(a, m, err); r != nil {
				return r
			}
			return fmt.Errorf("running the %s runner on %s: %w", a.Runner, m.MsgID, err)
		}
		if i, ok := st.steer.interrupted(); ok && out.Reason == runner.ReasonInterrupted {
			return interruptedError(a, m, i, st.session)
		}
		if out.Parked != nil {
			return parkedError(a, m, out, st.session)
		}
		if !out.Succeeded() || st.session == "" || turns >= maxSteerRuns {
			break
		}
		// The turn boundary: messages that came while the CLI ran, and
		// that it could not take, resume its session before the result.
		prompt := st.steer.queued(ctx)
		if prompt == "" {
			break
		}
		spec.SessionID, spec.Prompt = st.session, prompt
		out, err = st.run(spec)
	}
	if m.To == amp.RoleReviewer {
		// The review's checkout goes before its verdict: once the task
		// has the verdict, nothing of the review is left on disk.
		_ = runner.RemoveWorktree(context.WithoutCancel(ctx), in.Repo, dir)
	}
	if !out.Succeeded() {
		if over := st.failedOver(); over != nil {
			return over
		}
		return d.runFailedOn(ctx, a, in, dir, out, st.limit)
	}
	switch m.Type {
	case amp.TypeTaskDispatch:
		return d.submitResult(ctx, in, dir, st, out)
	case amp.TypeReviewRequest:
		return d.submitVerdict(ctx, a, in, dir, st, out, spec)
	}
	return nil
}

func (d *Delivery) prepareWorktree(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput) (string, error) {
	m := in.Message
	dir := activities.WorktreeDir(a.WorkDir, m.TaskID, m.To)
	if m.To == amp.RoleReviewer {
		if in.Commit == "" {
			return "", errors.New("the review request names no result commit")
		}
		if err := runner.RemoveWorktree(ctx, in.Repo, dir); err != nil {
			return "", err
		}
		return dir, runner.AddDetachedWorktree(ctx, in.Repo, dir, in.Commit)
	}
	if in.Branch == "" {
		return "", errors.New("the dispatch names no branch")
	}
	if d.Marks != nil {
		// A checkout ampflow was removing when it was stopped is finished
		// off, not worked in: what is missing there is not the agent's.
		marked, err := d.Marks.WorktreeMarked(ctx, dir)
		if err != nil {
			return "", err
		}
		if marked {
			if err := runner.RemoveWorktree(ctx, in.Repo, dir); err != nil {
				return "", err
			}
			if err := d.Marks.UnmarkWorktree(ctx, dir); err != nil {
				return "", err
			}
		}
	}
	return dir, runner.AddTaskWorktree(ctx, in.Repo, dir, in.Branch)
}

// run runs the CLI, heartbeating the activity while it works, since a
// tool call (a build, a test run) may keep it silent for minutes, and
// sends the task what it cost.
func (st *runState) run(spec runner.Spec) (out runner.Outcome, err error) {
	left, err := st.d.Budgets.left(st.ctx, st.a, st.m.To, st.repo)
	if err != nil {
		return out, err
	}
	spec.MaxCostUSD = runCap(capOf(st.in.MaxCostUSD, left), st.totals[spec.SessionID])
	if st.meter != nil {
		// The relays count this run alone, not the session's total.
		st.meter.SetCap(capOf(st.in.MaxCostUSD, left))
	}
	done := make(chan struct{})
	defer close(done)
	defer func() {
		if err == nil {
			st.report(out)
		}
	}()
	if activity.IsActivity(st.ctx) {
		go func() {
			tick := time.NewTicker(10 * time.Second)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					activity.RecordHeartbeat(st.ctx, st.m.MsgID)
				}
			}
		}()
	}
	if st.steer != nil {
		stop := make(chan runner.Reason, 1)
		var msgs chan runner.Message
		if runner.TakesInput(spec.Runner) {
			msgs = make(chan runner.Message)
			spec.Messages = msgs
		}
		if meter := spec.Stop; meter != nil {
			go func() {
				select {
				case r := <-meter:
					select {
					case stop <- r:
					case <-done:
					}
				case <-done:
				}
			}()
		}
		spec.Stop = stop
		wctx, cancel := context.WithCancel(st.ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			st.steer.watch(wctx, msgs, stop)
		}()
		defer func() { cancel(); <-watched }()
	}
	st.tw = st.d.startTranscript(st.ctx, st.m.TaskID, string(st.m.To), st.account, spec, st.meter)
	out, err = runner.Run(st.ctx, spec, st.on)
	if st.meter != nil {
		out.Usage = meteredUsage(out.Usage, st.meter.Usage(), out.Reason)
	}
	if err == nil {
		st.limit = st.limited(out)
		if st.limit != nil && st.tw != nil {
			st.tw.limitNote = st.limit.note
		}
	}
	st.tw.end(out, err)
	return out, err
}

// on takes one event of the CLI: the first ACKs the message; the others
// heartbeat the task (throttled) and the activity; tool calls go to the
// work log.
func (st *runState) on(ev runner.Event) {
	now := time.Now()
	if !st.acked {
		st.acked = true
		ack := amp.NewAck(st.m.To, st.m, now)
		ack.Metadata = map[string]any{"runner": "received, execution started"}
		raw, err := json.Marshal(ack)
		if err == nil {
			_, err = st.d.Submit.Submit(st.ctx, raw)
		}
		switch {
		case task.ErrorCode(err) == task.CodeFinished:
			// The task ended while the run was being started (a retry
			// after it was cancelled): nothing of it is wanted.
			st.ended = err
			st.end()
		case err != nil:
			// A retried run ACKs again, which the task may answer as
			// already taken; the reply still counts.
			st.d.log().Info("runner ACK not taken", "task_id", st.m.TaskID, "msg_id", st.m.MsgID, "error", err)
		}
	}
	if ev.Kind == runner.EventSession && ev.SessionID != "" && ev.SessionID != st.session {
		// Kept at once: a worker that dies mid-run resumes the session.
		st.session = ev.SessionID
		st.d.saveSession(st.a, st.m, ev.SessionID)
	}
	st.tw.event(ev)
	if ev.Kind == runner.EventToolCall && len(st.workLog) < maxWorkLog {
		st.workLog = append(st.workLog, amp.WorkLogEntry{Timestamp: now.UTC().Format(time.RFC3339), Action: ev.Tool,
			File: ev.File, Detail: clip(string(ev.Input), maxWorkDetail)})
	}
	st.noteSlot(ev)
	st.noteCommand(ev)
	if st.d.Heartbeats != nil && now.Sub(st.lastBeat) >= heartbeatEvery {
		st.lastBeat = now
		note := string(ev.Kind)
		if ev.Tool != "" {
			note = ev.Tool + " " + clip(string(ev.Input), 120)
		}
		if err := st.d.Heartbeats.Heartbeat(st.ctx, st.m.TaskID, task.HeartbeatInput{From: st.m.To, Note: note}); err != nil {
			st.d.log().Debug("runner heartbeat", "task_id", st.m.TaskID, "error", err)
		}
	}
}

func clip(s string, n int) string {
	s = child.OneLine(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
