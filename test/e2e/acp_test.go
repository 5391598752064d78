package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// acpGemini makes startRunnerDev's Gemini CLI role of role the acp
// runner's `gemini --acp`: the same HOME, key and fake model, the model
// on its command line (Gemini CLI offers no choice of it over ACP).
func acpGemini(t *testing.T, role amp.Role) []string {
	t.Helper()
	v := "AMPFLOW_AGENTS_" + strings.ToUpper(string(role)) + "_"
	return []string{v + "RUNNER=acp", v + "COMMAND=" + agentBin(t, "gemini") + ",--acp,--model,gemini-2.5-pro", v + "MODEL="}
}

// acpPlan is lowRiskPlan on a repository of its own, whose checkout is
// on main as the user's is, and a branch of its own: ampflow refuses a
// branch that another task's checkout works on, by its name alone.
func acpPlan(t *testing.T, branch string) (amp.TaskDispatch, string) {
	t.Helper()
	repo := gitRepo(t)
	git(t, repo, "checkout", "-q", "main")
	git(t, repo, "branch", branch, "feature/e2e")
	p := lowRiskPlan(repo)
	p.Branch = branch
	return p, repo
}

// asked waits for the task's tool_call decision; it fails at once when
// the task ends without one.
func (s *runnerDev) asked(t *testing.T, id string) decision.Decision {
	t.Helper()
	st := s.api.waitFor(id, "a tool_call decision", 3*time.Minute, func(st task.State) bool {
		return st.Pending != nil && st.Pending.Kind == task.KindToolCall ||
			st.Status == task.StatusDone || st.Status == task.StatusTerminated || st.Underlying() == task.StatusAwaitingAdmin
	})
	if st.Pending == nil || st.Pending.Kind != task.KindToolCall {
		t.Fatalf("task %s: status %s (%s), no tool_call decision", id, st.Status, st.LastError)
	}
	return *st.Pending
}

// agentCalls are the task's tool calls the agent asked about, without
// the destinations its sandbox's egress proxy recorded.
func agentCalls(c *apiClient, id string) []task.ToolCall {
	var out []task.ToolCall
	for _, tc := range c.toolCalls(id) {
		if tc.CLI == "acp" {
			out = append(out, tc)
		}
	}
	return out
}

// acpRules ask the admins before a shell command that names ASK-ME and
// allow the rest, whatever the default rules say of the network.
const acpRules = `AMPFLOW_TOOLS_RULES=[{"name":"ask-marker","kind":"shell","match":"ASK-ME","action":"ask","reason":"the marker asks"}]`

// geminiShell is Gemini CLI's shell tool running cmd.
func geminiShell(cmd string) *fakemodel.ToolCall {
	return &fakemodel.ToolCall{Name: "run_shell_command", Input: map[string]any{"command": cmd}}
}

// geminiCommit has Gemini CLI commit the files with msg.
func geminiCommit(msg string, files ...string) fakemodel.Turn {
	return fakemodel.Turn{Text: "Committing.", Tool: geminiShell("git add " + strings.Join(files, " ") +
		" && git -c user.name=gemini -c user.email=gemini@example.com commit -qm '" + msg + "'")}
}

const acpReport = `{"criteria_met": [true], "notes": [], "summary": "done"}`

// TestACP runs Gemini CLI through the acp runner as the executor and the
// reviewer of one `ampflow dev`, each against its fake model, with a
// tool policy that asks before a command naming ASK-ME. Its subtests run
// in order on the fakes' scripts: a task from dispatch to done; a
// command asked of the admins, approved over the API and run once; one
// denied with a note that reaches the model. Each permission request
// goes through `ampflow hook acp`, run by the worker outside the
// sandbox, while the agent runs in a network of its own and reaches its
// model through its sandbox's bridge.
func TestACP(t *testing.T) {
	approve := fakemodel.Turn{Text: `Looks right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "read it"}]}`}
	s := startRunnerDev(t, runnerOpts{tokens: true,
		executor: runner{"gemini", []fakemodel.Turn{
			// Done: the commit is allowed without asking; netns.txt
			// names the network namespace the agent's tools ran in.
			{Text: "Writing the file.", Tool: geminiShell("readlink /proc/self/ns/net > netns.txt; printf 'hello\\n' > hello.txt && git add hello.txt netns.txt && " +
				"git -c user.name=gemini -c user.email=gemini@example.com commit -qm 'add hello.txt'")},
			{Text: "Done. " + acpReport},
			// Approved: the marked command waits for the admins.
			{Text: "Marking.", Tool: geminiShell("echo ASK-ME >> asked.txt")},
			geminiCommit("add asked.txt", "asked.txt"),
			{Text: "Done. " + acpReport},
			// Denied: the agent goes on without the command, then is
			// told the admin's note in a turn of its own.
			{Text: "Marking.", Tool: geminiShell("echo ASK-ME >> denied.txt")},
			{Text: "Not marked."},
			{Text: "Understood: DENIAL-SEEN. " + acpReport},
		}},
		reviewer: runner{"gemini", []fakemodel.Turn{approve, approve, approve}},
		env:      append(append(acpGemini(t, amp.RoleExecutor), acpGemini(t, amp.RoleReviewer)...), acpRules),
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ampflow dev:\n%s", s.p.output())
		}
	})
	if out := s.p.output(); !strings.Contains(out, "executor   runner acp") || !strings.Contains(out, "sandboxed") || strings.Contains(out, "NOT sandboxed") {
		t.Errorf("dev did not say it checked the acp runner, sandboxed:\n%s", out)
	}
	ops := s.api

	t.Run("Done", func(t *testing.T) {
		const id = "T-2026-960"
		s.planner.startTask(id, lowRiskPlan(s.repo))
		if st := s.ended(id); st.Status != task.StatusDone {
			t.Fatalf("task %s: status %s (%s), want done", id, st.Status, st.LastError)
		}
		if got := git(t, s.repo, "show", "feature/e2e:hello.txt"); got != "hello" {
			t.Errorf("hello.txt on the branch = %q", got)
		}
		// The agent's tools ran in a network of its own.
		ours, err := os.Readlink("/proc/self/ns/net")
		if ns := git(t, s.repo, "show", "feature/e2e:netns.txt"); err != nil || !strings.HasPrefix(ns, "net:[") || ns == ours {
			t.Errorf("the agent's network namespace %q, the test's %q (%v): want one of its own", ns, ours, err)
		}
		s.checkClean(t, id)
		calls := agentCalls(ops, id)
		if len(calls) != 1 || calls[0].Tool != "execute" || calls[0].Kind != "shell" || calls[0].CLI != "acp" ||
			calls[0].Decision != task.ToolAllow || calls[0].Agent != "exec" || !strings.Contains(calls[0].Input, "hello.txt") {
			t.Errorf("the tool calls: %+v", calls)
		}
		commit := git(t, s.repo, "rev-parse", "feature/e2e")
		reviewed := false
		for _, r := range s.reviewer.AgentRequests() {
			reviewed = reviewed || r.Text(commit)
		}
		if !reviewed {
			t.Error("the reviewer's prompt did not name the result commit")
		}
	})

	t.Run("Approved", func(t *testing.T) {
		const id = "T-2026-961"
		plan, repo := acpPlan(t, "feature/acp-approved")
		s.planner.startTask(id, plan)
		d := s.asked(t, id)
		if !strings.Contains(d.Prompt, "ASK-ME") || len(d.Options) != 3 || d.Options[2].ID != task.OptDeny {
			t.Errorf("the decision: %+v", d)
		}
		if calls := agentCalls(ops, id); len(calls) != 1 || calls[0].Decision != task.ToolPending || calls[0].Rule != "ask-marker" {
			t.Fatalf("the tool calls before the answer: %+v", calls)
		}
		ops.decide(d, task.OptAllowOnce)
		if st := s.ended(id); st.Status != task.StatusDone {
			t.Fatalf("task %s: status %s (%s), want done", id, st.Status, st.LastError)
		}
		if got := git(t, repo, "show", plan.Branch+":asked.txt"); got != "ASK-ME" {
			t.Errorf("asked.txt on the branch = %q, want the command's one line", got)
		}
		calls := agentCalls(ops, id)
		if len(calls) != 2 {
			t.Fatalf("%d tool calls, want the asked one and the commit: %+v", len(calls), calls)
		}
		if a := calls[0]; a.Decision != task.ToolAllow || a.By != "ops" || a.Option != task.OptAllowOnce || a.Tool != "execute" {
			t.Errorf("the asked call: %+v", a)
		}
	})

	t.Run("DeniedWithNote", func(t *testing.T) {
		const id, note = "T-2026-962", "NOTE-5521 markers are for humans"
		plan, repo := acpPlan(t, "feature/acp-denied")
		s.planner.startTask(id, plan)
		d := s.asked(t, id)
		body := httpapi.DecideRequest{Option: task.OptDeny, Note: note, Digest: d.Digest}
		if code, resp := ops.call("POST", "/v1/decisions/"+d.ID, body, nil); code != http.StatusOK {
			t.Fatalf("denying %s: %d %s", d.ID, code, resp)
		}
		st := ops.awaitResult(id, 3*time.Minute)
		if files := git(t, repo, "ls-tree", "--name-only", "-r", plan.Branch); strings.Contains(files, "denied.txt") {
			t.Errorf("the denied command ran (status %s)", st.Status)
		}
		var noted, after bool
		for _, r := range s.executor.AgentRequests() {
			noted = noted || r.Text("NOTE-5521")
			after = after || r.Text("Not marked.") && r.Text("NOTE-5521")
		}
		if !noted || !after {
			t.Errorf("the admin's note reached the model: %v, after the agent's turn: %v", noted, after)
		}
		calls := agentCalls(ops, id)
		if len(calls) != 1 || calls[0].Decision != task.ToolDeny || calls[0].By != "ops" || !strings.Contains(calls[0].Reason, "NOTE-5521") {
			t.Errorf("the tool calls: %+v", calls)
		}
	})
}
