package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
)

// TranscriptStore keeps runners' transcripts (*ssot.DB).
type TranscriptStore interface {
	AppendTranscript(ctx context.Context, taskID string, entries []ssot.TranscriptEntry) ([]ssot.TranscriptEntry, error)
	TranscriptRun(ctx context.Context, taskID, role string) (int, error)
}

// Bounds of a run's transcript.
const (
	// MaxTranscriptRun bounds the text a run's transcript keeps; past it
	// one note says the rest was elided.
	MaxTranscriptRun = 2 << 20
	// MaxToolOutput is the tail of a tool's output an entry keeps.
	MaxToolOutput = 4 << 10
	// MaxToolInput and MaxEntryText bound a tool call's input and the
	// agent's text, kept from their start.
	MaxToolInput = 4 << 10
	MaxEntryText = 16 << 10
	// transcriptFlush is the least time between two writes of a run's
	// entries (an entry waits at most that long, and entries that come
	// meanwhile are written together), and transcriptBatch how many
	// entries make it write at once.
	transcriptFlush = 50 * time.Millisecond
	transcriptBatch = 64
)

// transcript is the writer of one run's transcript. The CLI's reader
// hands it events (add never waits on the store); a goroutine writes
// them in batches, at most one write every transcriptFlush unless
// transcriptBatch entries wait.
// Each entry carries the run's cost and tokens so far.
type transcript struct {
	// limitNote, set before end, says what a usage or rate limit did to
	// the run's account.
	limitNote string
	store     TranscriptStore
	log       *slog.Logger
	taskID    string
	role      string
	run       int
	secrets   []string
	scrub     *child.Scrubber
	price     func(runner.Usage) float64
	meter     *runner.Meter
	flush     time.Duration
	batch     int
	limit     int

	mu     sync.Mutex
	buf    []ssot.TranscriptEntry
	kept   int // bytes of text taken so far
	elided bool
	usage  runner.Usage
	result *runner.Usage

	wake chan struct{}
	full chan struct{}
	stop chan struct{}
	done chan struct{}
}

// startTranscript numbers the run after the role's last one and starts
// its writer; nil without a store (a worker with no SSOT).
func (d *Delivery) startTranscript(ctx context.Context, taskID, role, account string, spec runner.Spec, meter *runner.Meter) *transcript {
	if d.Transcripts == nil {
		return nil
	}
	last, err := d.Transcripts.TranscriptRun(ctx, taskID, role)
	if err != nil {
		d.log().Warn("numbering a runner's transcript", "task_id", taskID, "error", err)
	}
	t := &transcript{store: d.Transcripts, log: d.log(), taskID: taskID, role: role, run: last + 1,
		secrets: spec.Secrets, scrub: d.Secrets, price: spec.PriceUSD, meter: meter,
		flush: transcriptFlush, batch: transcriptBatch, limit: MaxTranscriptRun,
		wake: make(chan struct{}, 1), full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if d.transcriptFlush > 0 {
		t.flush = d.transcriptFlush
	}
	if d.transcriptLimit > 0 {
		t.limit = d.transcriptLimit
	}
	go t.loop()
	what := spec.Runner
	if spec.Model != "" {
		what += " (" + spec.Model + ")"
	}
	if account != "" {
		what += ", account " + account
	}
	if spec.SessionID != "" {
		what += ", resuming session " + spec.SessionID
	}
	t.add(ssot.TranscriptEntry{Kind: ssot.TranscriptStart, Text: what})
	return t
}

// event takes one event of the CLI.
func (t *transcript) event(ev runner.Event) {
	if t == nil {
		return
	}
	e := ssot.TranscriptEntry{Tool: ev.Tool, IsError: ev.IsError, ExitCode: ev.ExitCode}
	switch ev.Kind {
	case runner.EventText:
		e.Kind, e.Text = ssot.TranscriptText, head(ev.Text, MaxEntryText)
	case runner.EventToolCall:
		e.Kind, e.Text = ssot.TranscriptToolCall, head(string(ev.Input), MaxToolInput)
	case runner.EventToolResult:
		e.Kind, e.Text = ssot.TranscriptToolResult, tailOf(t.mask(ev.Text), MaxToolOutput)
	case runner.EventError:
		e.Kind, e.Text = ssot.TranscriptError, head(ev.Text, MaxEntryText)
		if strings.HasPrefix(ev.Text, "api_retry") {
			e.Kind = ssot.TranscriptRetry
		}
	case runner.EventUsage:
		e.Kind = ssot.TranscriptUsage
		t.mu.Lock()
		t.usage.InputTokens += ev.Usage.InputTokens
		t.usage.OutputTokens += ev.Usage.OutputTokens
		t.usage.CostUSD += ev.Usage.CostUSD
		t.usage.CostReported = t.usage.CostReported || ev.Usage.CostReported
		t.mu.Unlock()
	case runner.EventPlan:
		e.Kind, e.Text = ssot.TranscriptPlan, head(ev.Text, MaxEntryText)
	case runner.EventResult:
		e.Kind, e.Text = ssot.TranscriptResult, head(ev.Text, MaxEntryText)
		if ev.Usage != (runner.Usage{}) {
			u := ev.Usage
			t.mu.Lock()
			t.result = &u
			t.mu.Unlock()
		}
	default:
		return
	}
	t.add(e)
}

// end notes how the run ended, writes what is left and stops the writer.
func (t *transcript) end(out runner.Outcome, err error) {
	if t == nil {
		return
	}
	e := ssot.TranscriptEntry{Kind: ssot.TranscriptEnd}
	switch {
	case err != nil:
		e.Text, e.IsError = "the run did not start: "+err.Error(), true
	case out.Succeeded():
		e.Text = fmt.Sprintf("done in %s", out.Ended.Sub(out.Started).Round(time.Second))
	case out.Parked != nil:
		e.Text = "stopped with a tool call parked for the admins; the session resumes once it is answered"
	default:
		e.Text, e.IsError = runnerReason(out), true
		code := out.ExitCode
		e.ExitCode = &code
	}
	if out.Failure != nil && out.Failure.Class == runner.FailureRateLimit {
		w := ssot.TranscriptEntry{Kind: ssot.TranscriptRetry, Text: "rate limited: " + head(out.Failure.Message, 500)}
		if t.limitNote != "" {
			w.Text += "; " + t.limitNote
		} else if !out.Failure.ResetAt.IsZero() {
			w.Text += "; waiting until " + out.Failure.ResetAt.UTC().Format(time.RFC3339) + ", then the session resumes"
		}
		t.add(w)
	}
	if out.Usage != (runner.Usage{}) {
		u := out.Usage
		t.mu.Lock()
		t.result = &u
		t.mu.Unlock()
	}
	t.add(e)
	close(t.stop)
	<-t.done
}

// add stamps an entry with the time, its run and the usage so far, masks
// it and buffers it; past the run's bound it is dropped, the first time
// with a note in its place.
func (t *transcript) add(e ssot.TranscriptEntry) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.Role, e.Run = t.role, t.run
	e.Text, e.Tool = t.mask(e.Text), t.mask(e.Tool)
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.usage
	if r := t.result; r != nil && r.InputTokens+r.OutputTokens >= u.InputTokens+u.OutputTokens {
		u = *r
	}
	if t.meter != nil {
		if m := t.meter.Usage(); m.InputTokens+m.OutputTokens > u.InputTokens+u.OutputTokens {
			u = m
		}
	}
	e.InputTokens, e.OutputTokens, e.CostUSD = u.InputTokens, u.OutputTokens, u.CostUSD
	if !u.CostReported && t.price != nil {
		e.CostUSD = t.price(u)
	}
	if t.elided && e.Kind != ssot.TranscriptEnd {
		return
	}
	n := len(e.Text) + len(e.Tool)
	if t.kept+n > t.limit && e.Kind != ssot.TranscriptEnd {
		t.elided = true
		e = ssot.TranscriptEntry{At: e.At, Role: e.Role, Run: e.Run, Kind: ssot.TranscriptNote,
			InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, CostUSD: e.CostUSD,
			Text: fmt.Sprintf("the rest of this run's transcript is elided: it passed %d bytes", t.limit)}
	}
	t.kept += n
	t.buf = append(t.buf, e)
	select {
	case t.wake <- struct{}{}:
	default:
	}
	if len(t.buf) >= t.batch {
		select {
		case t.full <- struct{}{}:
		default:
		}
	}
}

func (t *transcript) mask(s string) string {
	for _, v := range t.secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, "***")
		}
	}
	if t.scrub != nil {
		s = t.scrub.Scrub(s)
	}
	return s
}

// loop writes what the buffer holds as soon as an entry comes, but
// leaves at least the flush interval between two writes (entries that
// come meanwhile wait and go together), unless a batch fills first.
func (t *transcript) loop() {
	defer close(t.done)
	var last time.Time
	for {
		select {
		case <-t.wake:
		case <-t.stop:
			t.write()
			return
		}
		if wait := t.flush - time.Since(last); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-t.full:
				timer.Stop()
			case <-t.stop:
				timer.Stop()
				t.write()
				return
			}
		}
		last = time.Now()
		t.write()
	}
}

// write stores what the buffer holds. A write that fails three times is
// logged and dropped: the transcript is what the run shows, never a reason to stop
// or slow it.
func (t *transcript) write() {
	t.mu.Lock()
	batch := t.buf
	t.buf = nil
	t.mu.Unlock()
	for len(batch) > 0 {
		n := min(len(batch), ssot.MaxTranscriptBatch)
		var err error
		for try := range 3 {
			if try > 0 {
				time.Sleep(time.Duration(try) * 100 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = t.store.AppendTranscript(ctx, t.taskID, batch[:n])
			cancel()
			if err == nil {
				break
			}
		}
		if err != nil {
			t.log.Warn("writing a runner's transcript", "task_id", t.taskID, "role", t.role, "run", t.run, "entries", n, "error", err)
		}
		batch = batch[n:]
	}
}

// head keeps the first n bytes of s, cut at a character.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// tailOf keeps the last n bytes of s, cut at a character.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

// inputCommand is the command a shell tool call ran, when its input
// names one ("command" or "cmd"), for the run's summary.
func inputCommand(input json.RawMessage) string {
	var v map[string]any
	if json.Unmarshal(input, &v) != nil {
		return ""
	}
	for _, k := range []string{"command", "cmd"} {
		switch c := v[k].(type) {
		case string:
			// Codex reports its shell's wrapper: /bin/bash -lc 'CMD'.
			for _, sh := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c "} {
				if in, ok := strings.CutPrefix(c, sh); ok && len(in) >= 2 && in[0] == '\'' && in[len(in)-1] == '\'' && !strings.Contains(in[1:len(in)-1], "'") {
					return in[1 : len(in)-1]
				}
			}
			return c
		case []any:
			parts := make([]string, 0, len(c))
			for _, p := range c {
				parts = append(parts, fmt.Sprint(p))
			}
			return strings.Join(parts, " ")
		}
	}
	return ""
}

// noteCommand keeps the commands of shell tool calls, and those whose
// result says they exited non-zero.
func (st *runState) noteCommand(ev runner.Event) {
	switch ev.Kind {
	case runner.EventToolCall:
		if c := inputCommand(ev.Input); c != "" && ev.ToolID != "" {
			if st.calls == nil {
				st.calls = map[string]string{}
			}
			st.calls[ev.ToolID] = c
		}
	case runner.EventToolResult:
		if ev.ExitCode != nil && *ev.ExitCode != 0 && len(st.failed) < maxWorkLog {
			c := st.calls[ev.ToolID]
			if c == "" {
				c = ev.Tool
			}
			st.failed = append(st.failed, failedCommand{command: c, code: *ev.ExitCode})
		}
	}
}

// maxFailedNamed bounds the failed commands a summary names.
const maxFailedNamed = 5

// failedSummary names the failed commands of a run for its result:
// "2 commands failed: `go test ./...` exit 127; `go vet ./...` exit 127";
// empty when none failed.
func failedSummary(failed []failedCommand) string {
	if len(failed) == 0 {
		return ""
	}
	noun := "commands"
	if len(failed) == 1 {
		noun = "command"
	}
	parts := make([]string, 0, min(len(failed), maxFailedNamed))
	for _, f := range failed[:min(len(failed), maxFailedNamed)] {
		parts = append(parts, fmt.Sprintf("`%s` exit %d", clip(f.command, 120), f.code))
	}
	s := fmt.Sprintf("%d %s failed: %s", len(failed), noun, strings.Join(parts, "; "))
	if len(failed) > maxFailedNamed {
		s += fmt.Sprintf("; and %d more (see the transcript)", len(failed)-maxFailedNamed)
	}
	return s
}

// RunTranscript is the writer of one run's transcript, for code that
// runs a CLI itself (the benchmarks): Event for each of its events, End
// once.
type RunTranscript struct{ t *transcript }

// StartTranscript starts the transcript of a new run of role on taskID;
// nil without Transcripts.
func (d *Delivery) StartTranscript(ctx context.Context, taskID, role string, spec runner.Spec) *RunTranscript {
	t := d.startTranscript(ctx, taskID, role, "", spec, nil)
	if t == nil {
		return nil
	}
	return &RunTranscript{t}
}

// Event takes one event of the run.
func (r *RunTranscript) Event(ev runner.Event) { r.t.event(ev) }

// End notes how the run ended and writes what is left.
func (r *RunTranscript) End(out runner.Outcome, err error) { r.t.end(out, err) }
