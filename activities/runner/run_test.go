package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests stand a shell script in for the CLI: Spec.Command is
// sh -c SCRIPT, and the arguments Run adds become the script's $@, unused.

const (
	initLine   = `{"type":"system","subtype":"init","session_id":"sess-1"}`
	resultLine = `{"type":"result","subtype":"success","is_error":false,"result":"all done","session_id":"sess-1","total_cost_usd":0.5,"usage":{"input_tokens":7,"output_tokens":3}}`
)

func scriptSpec(t *testing.T, script string) Spec {
	t.Helper()
	return Spec{
		Runner:            Claude,
		Command:           []string{"/bin/sh", "-c", script, "fakecli"},
		Dir:               t.TempDir(),
		Prompt:            "go",
		Env:               []string{"PATH=/usr/bin:/bin"},
		FirstEventTimeout: 10 * time.Second,
		IdleTimeout:       10 * time.Second,
		ExitGrace:         10 * time.Second,
		PIDDir:            t.TempDir(),
	}
}

func runScript(t *testing.T, ctx context.Context, s Spec, on func(Event)) Outcome {
	t.Helper()
	old := killGrace
	killGrace = 500 * time.Millisecond
	defer func() { killGrace = old }()
	o, err := Run(ctx, s, on)
	if err != nil {
		t.Fatal(err)
	}
	if groupAlive(o.PID) {
		t.Errorf("processes left in group %d", o.PID)
	}
	if left, _ := os.ReadDir(s.PIDDir); len(left) != 0 {
		t.Errorf("pid files left: %v", left)
	}
	return o
}

func sh(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("echo '" + l + "'\n")
	}
	return b.String()
}

func TestRunSucceeds(t *testing.T) {
	t.Setenv("AMPFLOW_LEAK_CHECK", "leaked")
	s := scriptSpec(t, `[ -z "$AMPFLOW_LEAK_CHECK" ] || exit 9`+"\n"+sh(initLine, resultLine))
	var kinds []EventKind
	var pidFiles int
	o := runScript(t, context.Background(), s, func(e Event) {
		kinds = append(kinds, e.Kind)
		if e.Kind == EventSession {
			files, _ := os.ReadDir(s.PIDDir)
			pidFiles = len(files)
		}
	})
	if !o.Succeeded() || o.Reason != ReasonExited || o.ExitCode != 0 {
		t.Fatalf("outcome %+v", o)
	}
	if o.SessionID != "sess-1" || o.Text != "all done" {
		t.Errorf("session %q, text %q", o.SessionID, o.Text)
	}
	if o.Usage.CostUSD != 0.5 || !o.Usage.CostReported || o.Usage.InputTokens != 7 {
		t.Errorf("usage %+v", o.Usage)
	}
	if pidFiles != 1 {
		t.Errorf("%d pid files while running, want 1", pidFiles)
	}
	if o.Failure != nil {
		t.Errorf("failure %+v on success", o.Failure)
	}
	if len(kinds) != 2 {
		t.Errorf("events %v", kinds)
	}
}

func TestRunWatchdogs(t *testing.T) {
	cases := []struct {
		name   string
		script string
		spec   func(*Spec)
		want   Reason
	}{
		{"FirstEvent", "exec sleep 60", func(s *Spec) { s.FirstEventTimeout = 200 * time.Millisecond }, ReasonFirstEvent},
		{"Idle", sh(initLine) + "exec sleep 60", func(s *Spec) { s.IdleTimeout = 300 * time.Millisecond }, ReasonIdle},
		{"ExitAfterResult", sh(initLine, resultLine) + "exec sleep 60", func(s *Spec) { s.ExitGrace = 300 * time.Millisecond }, ReasonExitAfterResult},
		{"Timeout", "while :; do echo '" + initLine + "'; sleep 0.05; done",
			func(s *Spec) { s.Timeout = 500 * time.Millisecond }, ReasonTimeout},
		{"MaxCost", sh(initLine, resultLine) + "exec sleep 60", func(s *Spec) { s.MaxCostUSD = 0.25 }, ReasonMaxCost},
		{"IgnoresSIGTERM", "trap '' TERM\n" + sh(initLine) + "sleep 60", func(s *Spec) { s.IdleTimeout = 300 * time.Millisecond }, ReasonIdle},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scriptSpec(t, c.script)
			c.spec(&s)
			o := runScript(t, context.Background(), s, nil)
			if o.Reason != c.want {
				t.Fatalf("reason %q, want %q (%+v)", o.Reason, c.want, o)
			}
			if o.Succeeded() {
				t.Error("a killed run succeeded")
			}
		})
	}
}

func TestRunPriceUSD(t *testing.T) {
	s := scriptSpec(t, sh(`{"type":"thread.started","thread_id":"th"}`,
		`{"type":"turn.completed","usage":{"input_tokens":1000,"output_tokens":100}}`)+"exec sleep 60")
	s.Runner = Codex
	s.MaxCostUSD = 1
	s.PriceUSD = func(u Usage) float64 { return float64(u.InputTokens) / 100 }
	o := runScript(t, context.Background(), s, nil)
	if o.Reason != ReasonMaxCost || o.Usage.CostUSD != 10 || !o.Usage.CostReported || !o.Usage.SessionTotal {
		t.Fatalf("outcome %+v", o)
	}
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := scriptSpec(t, sh(initLine)+"exec sleep 60")
	o := runScript(t, ctx, s, func(e Event) { cancel() })
	if o.Reason != ReasonCanceled || o.SessionID != "sess-1" {
		t.Fatalf("outcome %+v", o)
	}
}

// A CLI that exits leaving a child behind (holding its stdout) does not keep
// Run waiting, and the child dies with it.
func TestRunKillsStragglers(t *testing.T) {
	s := scriptSpec(t, "sleep 60 &\n"+sh(initLine, resultLine))
	o := runScript(t, context.Background(), s, nil)
	if !o.Succeeded() {
		t.Fatalf("outcome %+v", o)
	}
}

func TestRunFailures(t *testing.T) {
	cases := []struct {
		name   string
		script string
		class  FailureClass
		reset  time.Time
	}{
		{"Crash", `echo "panic: boom with sk-ant-secret-123 inside" >&2; exit 3`, FailureCrash, time.Time{}},
		{"Auth", sh(initLine, `{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Please run /login","session_id":"sess-1"}`) + "exit 1",
			FailureAuth, time.Time{}},
		{"RateLimit", sh(initLine) + `echo "Claude AI usage limit reached|1795000000" >&2; exit 1`, FailureRateLimit, time.Unix(1795000000, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scriptSpec(t, c.script)
			s.Env = append(s.Env, "ANTHROPIC_API_KEY=sk-ant-secret-123")
			o := runScript(t, context.Background(), s, nil)
			if o.Succeeded() || o.Failure == nil {
				t.Fatalf("outcome %+v", o)
			}
			if o.Failure.Class != c.class || !o.Failure.ResetAt.Equal(c.reset) {
				t.Errorf("failure %+v, want %s reset %v", o.Failure, c.class, c.reset)
			}
			if strings.Contains(o.Stderr, "sk-ant-secret-123") {
				t.Errorf("secret in stderr tail: %q", o.Stderr)
			}
		})
	}
	t.Run("ExitCode", func(t *testing.T) {
		o := runScript(t, context.Background(), scriptSpec(t, "echo boom >&2; exit 3"), nil)
		if o.ExitCode != 3 || o.Stderr != "boom\n" || o.Failure.Message != "exit status 3 without a final result: boom" {
			t.Errorf("outcome %+v", o)
		}
	})
	t.Run("LastLines", func(t *testing.T) {
		o := runScript(t, context.Background(), scriptSpec(t, "for i in 1 2 3 4 5; do echo line$i >&2; done; exit 7"), nil)
		if want := "exit status 7 without a final result: line3 | line4 | line5"; o.Failure == nil || o.Failure.Message != want {
			t.Errorf("failure %+v, want %q", o.Failure, want)
		}
	})
}

func TestRunRefuses(t *testing.T) {
	s := scriptSpec(t, "true")
	s.Command = []string{"no-such-agent-cli"}
	if _, err := Run(context.Background(), s, nil); err == nil {
		t.Error("a missing binary was accepted")
	}
	s = scriptSpec(t, "true")
	s.Dir = filepath.Join(s.Dir, "missing")
	if _, err := Run(context.Background(), s, nil); err == nil {
		t.Error("a missing directory was accepted")
	}
	s = scriptSpec(t, "true")
	s.Prompt = ""
	if _, err := Run(context.Background(), s, nil); err == nil {
		t.Error("an empty prompt was accepted")
	}
}

func startGroup(t *testing.T, name string, args ...string) int {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { signalGroup(cmd.Process.Pid, syscall.SIGKILL) })
	return cmd.Process.Pid
}

func TestReap(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	orphan := startGroup(t, "/bin/sh", "-c", "sleep 60 & exec sleep 61")
	if _, err := writePIDFile(dir, orphan, []string{"/bin/sh", "-c", "x"}); err != nil {
		t.Fatal(err)
	}
	// A pid file whose process now runs something else is left alone.
	other := startGroup(t, "sleep", "62")
	if _, err := writePIDFile(dir, other, []string{"/usr/bin/claude"}); err != nil {
		t.Fatal(err)
	}
	// Wait until the shell has exec'd sleep 61, so its command line is sleep's.
	deadline := time.Now().Add(10 * time.Second)
	for {
		cl, _ := commandLine(orphan)
		if strings.HasPrefix(cl, "sleep 61") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan still runs %q", cl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The orphan's file names the shell it was started as: rewrite it to
	// the command it runs now, as a crashed worker's CLI would.
	if _, err := writePIDFile(dir, orphan, []string{"/usr/bin/sleep"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "99999999.json"), []byte(`{"pid":99999999,"command":["x"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	killed, err := Reap(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0] != orphan {
		t.Errorf("killed %v, want [%d]", killed, orphan)
	}
	if groupAlive(orphan) {
		t.Error("the orphaned group lives on")
	}
	if !groupAlive(other) {
		t.Error("a process that is not the run's was killed")
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("pid files left: %v", left)
	}
	if killed, err := Reap(filepath.Join(dir, "none")); err != nil || killed != nil {
		t.Errorf("missing dir: %v %v", killed, err)
	}
}

func TestResetAt(t *testing.T) {
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		msg  string
		want time.Time
	}{
		{"Claude AI usage limit reached|1795000000", time.Unix(1795000000, 0)},
		{`{"resets_at": 1795000001}`, time.Unix(1795000001, 0)},
		{"rate limited, resets at 2026-03-04T12:30:00Z", time.Date(2026, 3, 4, 12, 30, 0, 0, time.UTC)},
		{"You've hit your usage limit. Try again in 2 hours 5 minutes.", now.Add(2*time.Hour + 5*time.Minute)},
		{"429 Too Many Requests, retry after 30s", now.Add(30 * time.Second)},
		{"You've hit your usage limit. Try again in 1 day, 3h", now.Add(27 * time.Hour)},
		{"usage limit reached, try again at 3:04 PM", time.Date(2026, 3, 4, 15, 4, 0, 0, time.UTC)},
		{"usage limit reached, try again at 9:30 am", time.Date(2026, 3, 5, 9, 30, 0, 0, time.UTC)},
		// Codex 0.171's usage limit: the time alone on the same day,
		// with the date on another, the seconds dropped.
		{"You’ve hit your usage limit. Try again at 10:00 AM.", time.Date(2026, 3, 4, 10, 1, 0, 0, time.UTC)},
		{"You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase more credits or try again at 1:17 PM.",
			time.Date(2026, 3, 4, 13, 17, 0, 0, time.UTC)},
		{"You’ve hit your usage limit. Try again at Mar 5th, 2026 12:17 AM.", time.Date(2026, 3, 5, 0, 17, 0, 0, time.UTC)},
		{"You’ve hit your usage limit. Try again at Dec 2nd, 2026 1:05 PM.", time.Date(2026, 12, 2, 13, 5, 0, 0, time.UTC)},
		{"You’ve hit your usage limit. Try again later.", time.Time{}},
		{"rate limit exceeded", time.Time{}},
	}
	for _, c := range cases {
		if got := resetAt(c.msg, now); !got.Equal(c.want) {
			t.Errorf("resetAt(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		errs   []string
		stderr string
		reason Reason
		want   FailureClass
	}{
		{[]string{"api_retry: rate_limit (HTTP 429), attempt 8 of 10"}, "", ReasonIdle, FailureRateLimit},
		{[]string{"API Error: 401 {\"error\":\"invalid x-api-key\"}"}, "", ReasonExited, FailureAuth},
		{nil, "Error: GEMINI_API_KEY not valid. API key not valid. Please pass a valid API key.", ReasonExited, FailureAuth},
		{nil, "RESOURCE_EXHAUSTED: Quota exceeded", ReasonExited, FailureRateLimit},
		{[]string{"You’ve hit your usage limit. Try again at Dec 2nd, 2026 12:17 AM."}, "", ReasonExited, FailureRateLimit},
		{nil, "Missing environment variable: `OPENAI_API_KEY`.", ReasonExited, FailureAuth},
		{nil, "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.", ReasonExited, FailureAuth},
		{[]string{"ANTHROPIC_API_KEY is not set"}, "", ReasonExited, FailureAuth},
		{[]string{`ACP session/prompt: {"code":500,"message":"terminated"}`}, "", ReasonExited, FailureNetwork},
		{nil, "TypeError: terminated\n    at Fetch.onAborted (node:internal/deps/undici/undici:10815:53)", ReasonExited, FailureNetwork},
		{[]string{"stream disconnected before completion: error sending request"}, "", ReasonExited, FailureNetwork},
		{nil, "Terminated", ReasonExited, FailureCrash},
		{nil, "segfault", ReasonExited, FailureCrash},
		{nil, "warning: rate limit header missing\nsegfault", ReasonExited, FailureCrash},
		{nil, "", ReasonIdle, ""},
	}
	for i, c := range cases {
		f := classify(Outcome{Reason: c.reason, Stderr: c.stderr, ExitCode: 1}, c.errs)
		var got FailureClass
		if f != nil {
			got = f.Class
		}
		if got != c.want {
			t.Errorf("case %d: class %q, want %q (%+v)", i, got, c.want, f)
		}
	}
}

func TestMask(t *testing.T) {
	env := []string{"PATH=/usr/bin:/bin", "HOME=/home/agent", "OPENAI_API_KEY=abc", "IS_SANDBOX=1",
		"CUSTOM_URL=https://internal.example/v1", "ANTHROPIC_AUTH_TOKEN=tok-1234567890"}
	got := mask("key abc at https://internal.example/v1 via tok-1234567890 in /home/agent, PATH /usr/bin:/bin, 1", secretsOf(env))
	want := "key *** at *** via *** in /home/agent, PATH /usr/bin:/bin, 1"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestTail(t *testing.T) {
	tl := &tail{n: 4}
	tl.Write([]byte("abc"))
	tl.Write([]byte("defg"))
	if tl.String() != "defg" {
		t.Errorf("tail %q", tl.String())
	}
}

// TestReapRunsOwner: a run's pid file keeps whose run it is, and ReapRuns
// hands that back for a run that is gone.
func TestReapRunsOwner(t *testing.T) {
	dir := t.TempDir()
	owner := &RunOwner{TaskID: "T-2026-008", MsgID: "m-1", Role: "executor", Session: "S-1", WorkflowID: "w", ActivityID: "5"}
	if _, err := writePIDFile(dir, 999999, []string{"/usr/bin/codex"}, owner); err != nil {
		t.Fatal(err)
	}
	runs, err := ReapRuns(dir)
	if err != nil || len(runs) != 1 || runs[0].Killed || runs[0].Owner == nil || *runs[0].Owner != *owner {
		t.Fatalf("ReapRuns = %+v, %v; want the gone run with its owner", runs, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("pid files left: %v", left)
	}
}
