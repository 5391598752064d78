package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// The ACP agents: each native case's CLI in its ACP mode, or Claude
// Code's ACP adapter driving the pinned Claude Code, against the same
// fake. OpenCode asks nothing unless its config says so: this one asks
// before a command or an edit.
var (
	acpGeminiCase = agentCase{
		runner: ACP,
		spec: func(t *testing.T, fake *fakemodel.Server) Spec {
			s := geminiCase.spec(t, fake)
			s.Runner, s.Command, s.Model = ACP, []string{s.Command[0], "--acp", "--model", s.Model}, ""
			return s
		},
		shell: geminiCase.shell,
	}
	acpOpenCodeCase = agentCase{
		runner: ACP,
		spec: func(t *testing.T, fake *fakemodel.Server) Spec {
			s := opencodeCase.spec(t, fake)
			s.Runner, s.Command = ACP, []string{s.Command[0], "acp"}
			s.Env = append(s.Env, `OPENCODE_CONFIG_CONTENT={"permission":{"bash":"ask","edit":"ask"}}`)
			return s
		},
		shell: opencodeCase.shell, // its ACP side reports no cost
	}
	acpClaudeCase = agentCase{
		runner: ACP,
		spec: func(t *testing.T, fake *fakemodel.Server) Spec {
			s := claudeCase.spec(t, fake)
			s.Runner, s.Command = ACP, []string{agentsBin(t, "claude-agent-acp")}
			s.Env = append(s.Env, "CLAUDE_CODE_EXECUTABLE="+agentsBin(t, "claude"))
			return s
		},
		shell:        claudeCase.shell,
		costReported: true,
	}
)

// asks records an ACP run's permission requests and answers them.
type asks struct {
	mu     sync.Mutex
	got    []PermissionRequest
	answer func(PermissionRequest) PermissionAnswer
}

func (a *asks) permission(_ context.Context, r PermissionRequest) PermissionAnswer {
	a.mu.Lock()
	a.got = append(a.got, r)
	a.mu.Unlock()
	if a.answer == nil {
		return PermissionAnswer{Allow: true}
	}
	return a.answer(r)
}

func (a *asks) list() []PermissionRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]PermissionRequest(nil), a.got...)
}

// acpRun is a worktree on a task branch and a Spec for c in it.
func acpRun(t *testing.T, c agentCase, fake *fakemodel.Server, a *asks) (Spec, string) {
	t.Helper()
	repo := newRepo(t)
	wt := filepath.Join(t.TempDir(), "worktrees", "task-1")
	if err := AddTaskWorktree(context.Background(), repo, wt, "ampflow/task-1"); err != nil {
		t.Fatal(err)
	}
	s := c.spec(t, fake)
	s.Dir, s.PIDDir = wt, t.TempDir()
	s.Prompt = "Add hello.txt and commit it."
	s.SystemPrompt = "SYSTEM-PROMPT-MARKER: report in JSON."
	s.Timeout, s.IdleTimeout, s.FirstEventTimeout = 4*time.Minute, 2*time.Minute, 3*time.Minute
	s.Permission = a.permission
	return s, wt
}

// testACPCommit runs c on the commit script: the agent asks before its
// shell command, the policy allows it, the commit is in git, the tool's
// output reaches the model, and the run's text is the last message's.
// With resume, a second run loads the session and sends its history, and
// no turn went to a request ampflow has no use for.
func testACPCommit(t *testing.T, c agentCase, recordAs string, resume bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fake := fakemodel.New(c.commitScript()...)
	defer fake.Close()
	a := &asks{}
	spec, wt := acpRun(t, c, fake, a)
	record(t, recordAs)
	var events []Event
	o, err := Run(ctx, spec, func(e Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	if !o.Succeeded() || o.SessionID == "" {
		t.Fatalf("run: %+v", o)
	}
	if o.Text != "Done: hello.txt is committed." {
		t.Errorf("final text %q, want the last message's", o.Text)
	}
	if o.Usage.InputTokens == 0 || o.Usage.CostReported != c.costReported {
		t.Errorf("usage %+v, want tokens and CostReported %v", o.Usage, c.costReported)
	}
	got := a.list()
	if len(got) != 1 || got[0].Tool != "execute" || !strings.Contains(got[0].Title+string(got[0].Input), "git commit") {
		t.Errorf("permission requests %+v, want one to execute the commit", got)
	}
	if msg := gitOut(t, wt, "log", "-1", "--format=%s"); msg != "add hello" {
		t.Errorf("last commit %q", msg)
	}
	reqs := fake.AgentRequests()
	if len(reqs) < 2 || !reqs[1].Text("COMMITTED-42") || !reqs[0].Text("SYSTEM-PROMPT-MARKER") {
		t.Errorf("the prompt or the tool's output did not reach the model (%d requests)", len(reqs))
	}
	var call, result bool
	for _, e := range events {
		call = call || e.Kind == EventToolCall && e.Tool == "execute"
		result = result || e.Kind == EventToolResult && e.Tool == "execute" && !e.IsError
	}
	if !call || !result {
		t.Errorf("events: tool call %v, tool result %v", call, result)
	}
	if groupAlive(o.PID) {
		t.Error("processes left in the run's group")
	}
	if left, _ := os.ReadDir(spec.PIDDir); len(left) != 0 {
		t.Errorf("pid files left: %v", left)
	}
	if !resume {
		return
	}
	spec.SessionID, spec.Prompt = o.SessionID, "Anything left to do?"
	var replayed bool
	o2, err := Run(ctx, spec, func(e Event) { replayed = replayed || e.Kind == EventToolCall })
	if err != nil {
		t.Fatal(err)
	}
	if !o2.Succeeded() || o2.Text != "Resumed and still done." || o2.SessionID != o.SessionID {
		t.Fatalf("resumed run: %+v", o2)
	}
	if replayed {
		t.Error("the loaded session's history came out as this run's events")
	}
	reqs = fake.AgentRequests()
	if last := reqs[len(reqs)-1]; !last.Text("Anything left to do?") || !last.Text("COMMITTED-42") {
		t.Error("the resumed request lacks the new prompt or the earlier history")
	}
	// claude-agent-acp asks the model for a guess at the user's next
	// prompt after each turn, with the session's tools, unless the
	// session's _meta turns that off.
	for _, r := range fake.Requests() {
		if r.Text("[SUGGESTION MODE") {
			t.Error("the agent asked the model for a prompt suggestion")
			break
		}
	}
}

// testACPDeny denies the agent's command with a note: the agent's
// reject_once option is selected (it carries on, the command does not
// run) and the note reaches the model in the turn after.
func testACPDeny(t *testing.T, c agentCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	marker := filepath.Join(t.TempDir(), "ran")
	fake := fakemodel.New(
		fakemodel.Turn{Text: "Pushing.", Tool: c.shell("echo ran > " + marker)},
		fakemodel.Turn{Text: "Not pushed."},
		fakemodel.Turn{Text: "Understood: DENIAL-SEEN."},
	)
	defer fake.Close()
	a := &asks{answer: func(PermissionRequest) PermissionAnswer {
		return PermissionAnswer{Reason: "ops: NOTE-7731 pushing is for humans"}
	}}
	spec, _ := acpRun(t, c, fake, a)
	o, err := Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the denied command ran")
	}
	if !o.Succeeded() || !strings.Contains(o.Text, "DENIAL-SEEN") {
		t.Errorf("run: %+v", o)
	}
	var noted bool
	for _, r := range fake.AgentRequests() {
		noted = noted || r.Text("NOTE-7731")
	}
	if !noted {
		t.Error("the deny's note did not reach the model")
	}
}

// TestACPGeminiCommit resumes seconds after the session began: Gemini
// CLI 0.61 loads no session within the minute its chat file is named
// for, so the second run waits for that minute to pass before its
// session/load (acp_gemini.go).
func TestACPGeminiCommit(t *testing.T) {
	testACPCommit(t, acpGeminiCase, "acp_gemini_commit.jsonl", true)
}

func TestACPGeminiDeny(t *testing.T)     { testACPDeny(t, acpGeminiCase) }
func TestACPGeminiIdleKill(t *testing.T) { testIdleKill(t, acpGeminiCase) }

func TestACPOpenCodeCommit(t *testing.T) {
	testACPCommit(t, acpOpenCodeCase, "acp_opencode_commit.jsonl", true)
}
func TestACPOpenCodeIdleKill(t *testing.T) { testIdleKill(t, acpOpenCodeCase) }

func TestACPClaudeCommit(t *testing.T) {
	testACPCommit(t, acpClaudeCase, "acp_claude_commit.jsonl", true)
}
func TestACPClaudeDeny(t *testing.T)     { testACPDeny(t, acpClaudeCase) }
func TestACPClaudeIdleKill(t *testing.T) { testIdleKill(t, acpClaudeCase) }
