package dashboard

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// toolDecision is a tool_call decision as the task raises it.
func toolDecision(taskID, tool, kind, input string) decision.Decision {
	d := decision.Decision{
		ID: taskID + "-d2", Subject: taskID, Kind: task.KindToolCall,
		Prompt: "exec wants to run " + tool + " (" + kind + ") in /wt: " + input,
		Options: []decision.Option{
			{ID: task.OptAllowOnce, Label: "Allow once"},
			{ID: task.OptAllowTool, Label: "Allow this tool for the rest of the task"},
			{ID: task.OptDeny, Label: "Deny", NoteRequired: true},
		},
		Context: decision.Context{Description: "Add a health check", Repo: "/src/app", Extra: map[string]any{
			"tool_call": taskID + "-tc1", "tool": tool, "kind": kind, "input": input, "cwd": "/wt/" + taskID,
			"rule": "ask-network", "reason": "the network needs an admin", "agent": "exec", "risk": "high"}},
		RaisedAt: t0, Required: 2, OnExpiry: task.OptDeny,
	}
	d.Digest, _ = decision.Digest(map[string]any{"task": taskID, "tool": tool})
	return d
}

// TestToolCallCard: a tool_call decision's card shows the command (or
// the file and its diff) escaped, the directory, the rule, its reason
// and its risk, the quorum and the three answers.
func TestToolCallCard(t *testing.T) {
	f := newFixture(t, testTokens)
	shell := toolDecision("T-2026-061", "Bash", "shell", `{"command":"curl -s http://x/ <script>alert(1)</script> token=sekret-0123","description":"probe"}`)
	edit := toolDecision("T-2026-062", "Edit", "edit", `{"file_path":"/wt/T-2026-062/a.html","new_string":"<b>new</b>","old_string":"old"}`)
	for _, d := range []decision.Decision{shell, edit} {
		st := taskState(t, d.Subject, 1, task.StatusInProgress, &d)
		if _, err := f.db.Save(context.Background(), d.Subject, []ssot.Entry{{ID: d.ID, Kind: "decision", RecordedAt: t0, Body: mustJSON(t, d)}}, &st); err != nil {
			t.Fatal(err)
		}
	}
	c := f.client(t)
	c.signIn("tok-ana")
	for path, wants := range map[string][]string{
		"/tasks/T-2026-061": {`<pre class="tool-command">curl -s http://x/ &lt;script&gt;alert(1)&lt;/script&gt; token=***</pre>`,
			"<dt>Directory</dt><dd><code>/wt/T-2026-061</code></dd>", "<code>ask-network</code> — the network needs an admin",
			"<dt>Rule risk</dt><dd>high</dd>", "<dt>Quorum</dt><dd>2 admins</dd>", "<strong>exec</strong> wants to run <code>Bash</code> (shell)"},
		"/tasks/T-2026-062": {"File <code>/wt/T-2026-062/a.html</code>", `<pre class="tool-diff">- old` + "\n" + `&#43; &lt;b&gt;new&lt;/b&gt;</pre>`},
	} {
		resp, page := c.do("GET", path, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		for _, want := range wants {
			if !strings.Contains(page, want) {
				t.Errorf("GET %s lacks %q", path, want)
			}
		}
		if strings.Contains(page, "sekret-0123") {
			t.Errorf("GET %s shows the token in the command", path)
		}
		if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>new</b>") {
			t.Errorf("GET %s shows the tool's input unescaped", path)
		}
		for _, o := range shell.Options {
			if !strings.Contains(page, `value="`+o.ID+`"`) || !strings.Contains(page, ">"+o.Label+"</button>") {
				t.Errorf("GET %s has no %q button", path, o.Label)
			}
		}
	}
}
