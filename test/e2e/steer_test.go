package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// claudeCommit is a Claude Code tool call that writes hello.txt and commits it.
func claudeCommit() *fakemodel.ToolCall {
	return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"description": "Commit hello.txt",
		"command": "printf 'hello\\n' > hello.txt && git add hello.txt && git -c user.name=claude -c user.email=claude@example.com commit -qm 'add hello.txt'"}}
}

const executorReport = `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt"}`

// messages reads what was sent to a task's agent.
func (s *runnerDev) messages(id string) []ssot.TaskMessage {
	var out struct {
		Messages []ssot.TaskMessage `json:"messages"`
	}
	s.api.do("GET", "/v1/tasks/"+id+"/messages", nil, &out)
	return out.Messages
}

// delivered waits until every message sent to the task's agent was delivered.
func (s *runnerDev) delivered(t *testing.T, id string) []ssot.TaskMessage {
	t.Helper()
	var ms []ssot.TaskMessage
	eventually(t, 2*time.Minute, "the messages delivered", func() (bool, error) {
		ms = s.messages(id)
		for _, m := range ms {
			if !m.Delivered() {
				return false, fmt.Errorf("message %d not delivered", m.ID)
			}
		}
		return len(ms) > 0, fmt.Errorf("%d messages", len(ms))
	})
	return ms
}

// served waits until the model has had n agent requests.
func served(t *testing.T, model *fakemodel.Server, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d model requests", n), func() (bool, error) {
		return model.Served() >= n, fmt.Errorf("%d served", model.Served())
	})
}

// TestSteerClaude sends `ampflow task say` (as the coordinator that
// started the task) while Claude Code waits for its model: the message
// is written to its input at once, and the model's next request has it.
func TestSteerClaude(t *testing.T) {
	release := make(chan struct{})
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"claude", []fakemodel.Turn{
		{Text: "Writing the file.", Tool: claudeCommit(), Hold: release},
		{Text: "Noted. " + executorReport},
	}}})
	const id = "T-2026-951"
	s.planner.startTask(id, lowRiskPlan(s.repo))
	served(t, s.executor, 1)
	// Another coordinator may not steer the task; the one that started it may.
	if _, errOut, code := bareCLI(t, s.p, opsToken, "task", "say", id, ""); code == 0 {
		t.Errorf("an empty message was sent: %s", errOut)
	}
	out := mustCLI(t, s.p, plannerToken, "task", "say", id, "STEER-CLAUDE use tabs", "-o", "json")
	if !strings.Contains(out, `"kind": "message"`) && !strings.Contains(out, `"kind":"message"`) {
		t.Errorf("task say -o json printed %s", out)
	}
	ms := s.delivered(t, id) // written to Claude Code's input while its model still answers
	close(release)
	s.api.waitFor(id, "its result", 3*time.Minute, func(st task.State) bool { return st.Status == task.StatusInReview })
	// Claude Code hands the message to the model with the tool's result:
	// the next request, in the same session.
	reqs := s.executor.AgentRequests()
	if len(reqs) != 2 || reqs[0].Text("STEER-CLAUDE") || !reqs[1].Text("STEER-CLAUDE") || !reqs[1].Text("write hello.txt") {
		t.Fatalf("%d model requests; want the message in the second, with the prompt's turn", len(reqs))
	}
	if ms[0].Sender != "planner" || !strings.HasSuffix(ms[0].Run, "/executor") {
		t.Errorf("message %+v", ms[0])
	}
	if !strings.Contains(mustCLI(t, s.p, opsToken, "task", "messages", id), "STEER-CLAUDE") {
		t.Error("task messages does not list the message")
	}
	// The transcript shows the message where the agent got it.
	eventually(t, 30*time.Second, "the message in the transcript", func() (bool, error) {
		out := mustCLI(t, s.p, opsToken, "task", "logs", id)
		return strings.Contains(out, "message from planner") && strings.Contains(out, "STEER-CLAUDE"), fmt.Errorf("task logs:\n%s", out)
	})
}

// TestSteerCodex sends `ampflow task say` while Codex waits for its
// model: Codex takes no input mid-run, so the message waits, and the run
// resumes its session with it before ampflow reads the result.
func TestSteerCodex(t *testing.T) {
	release := make(chan struct{})
	commit := codexCommit("hello", "add hello.txt")
	commit.Hold = release
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"codex", []fakemodel.Turn{
		commit,
		{Text: executorReport},
		{Text: "Noted. " + executorReport},
	}}})
	const id = "T-2026-952"
	s.planner.startTask(id, lowRiskPlan(s.repo))
	served(t, s.executor, 1)
	mustCLI(t, s.p, opsToken, "task", "say", id, "STEER-CODEX keep it short")
	if ms := s.messages(id); len(ms) != 1 || ms[0].Delivered() {
		t.Fatalf("messages %+v; want one waiting for the turn boundary", ms)
	}
	close(release)
	s.api.waitFor(id, "its result", 3*time.Minute, func(st task.State) bool { return st.Status == task.StatusInReview })
	s.delivered(t, id)
	reqs := s.executor.AgentRequests()
	if len(reqs) != 3 || reqs[1].Text("STEER-CODEX") || !reqs[2].Text("STEER-CODEX") || !reqs[2].Text("write hello.txt") {
		t.Fatalf("%d model requests; want the message in the third, a resumed session with the prompt's turn", len(reqs))
	}
}

// TestInterruptResume interrupts a Claude Code run while it waits for its
// model: no process of the run is left, its session is kept, and a later
// `ampflow task say` resumes the same session with the message; the task
// then gets its result.
func TestInterruptResume(t *testing.T) {
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"claude", []fakemodel.Turn{
		{Hang: true},
		{Text: "Writing the file.", Tool: claudeCommit()},
		{Text: executorReport},
	}}})
	const id = "T-2026-953"
	s.planner.startTask(id, lowRiskPlan(s.repo))
	served(t, s.executor, 1)
	session := filepath.Join(s.p.dataDir, "sessions", id+".executor.claude")
	eventually(t, time.Minute, "the session kept", func() (bool, error) {
		_, err := os.Stat(session)
		return err == nil, err
	})
	before, _ := os.ReadFile(session)
	if _, errOut, code := bareCLI(t, s.p, plannerToken, "task", "interrupt", id); code == 0 {
		t.Errorf("a coordinator interrupted the task: %s", errOut)
	}
	mustCLI(t, s.p, opsToken, "task", "interrupt", id)
	st := s.api.waitFor(id, "interrupted", time.Minute, func(st task.State) bool { return st.Interrupted != nil })
	if st.Interrupted.By != "ops" || st.Interrupted.Role != "executor" {
		t.Errorf("interrupted %+v", st.Interrupted)
	}
	eventually(t, 30*time.Second, "no process of the interrupted run", func() (bool, error) {
		ps := agentProcs(t, s.p.dataDir)
		pids, _ := os.ReadDir(activities.PIDDir(s.p.dataDir))
		return len(ps) == 0 && len(pids) == 0, fmt.Errorf("processes %v, pid files %d", ps, len(pids))
	})
	mustCLI(t, s.p, opsToken, "task", "say", id, "RESUME-NOW carry on")
	st = s.api.waitFor(id, "its result", 3*time.Minute, func(st task.State) bool { return st.Status == task.StatusInReview })
	if st.Interrupted != nil {
		t.Errorf("still interrupted: %+v", st.Interrupted)
	}
	after, _ := os.ReadFile(session)
	if string(after) != string(before) {
		t.Errorf("session %q after the resume, want %q", after, before)
	}
	reqs := s.executor.AgentRequests()
	if len(reqs) != 3 || !reqs[1].Text("RESUME-NOW") || !reqs[1].Text("write hello.txt") {
		t.Fatalf("%d model requests; want the resumed run's first to carry the message and the session's prompt", len(reqs))
	}
	if got := git(t, s.repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
}
