package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/activities/ssot"
)

// deployToken is a secret in the executor's environment, which its
// command prints.
const deployToken = "deploy-secret-e2e-0123456789"

// TestTranscriptLive runs an executor whose tool call is a command that
// prints a secret of its environment (DEPLOY_TOKEN) and exits 3, with the real Codex and the real
// Claude Code. While the fake model holds its next reply, the command's
// output and exit code are in `ampflow task logs -f` and on the
// dashboard's task page in Chromium, the key masked; once the run ends,
// the result names the failed command.
func TestTranscriptLive(t *testing.T) {
	chromiumPath(t)
	for _, c := range []struct {
		cli   string
		shell func(cmd string) *fakemodel.ToolCall
	}{
		{"codex", func(cmd string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
		}},
		{"claude", func(cmd string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd}}
		}},
	} {
		t.Run(c.cli, func(t *testing.T) {
			hold := make(chan struct{})
			var once sync.Once
			release := func() { once.Do(func() { close(hold) }) }
			t.Cleanup(release)
			command := "echo key=$DEPLOY_TOKEN; echo TRANSCRIPT-OUT; exit 3"
			s := startRunnerDev(t, runnerOpts{executor: runner{c.cli, []fakemodel.Turn{
				{Text: "Running the check.", Tool: c.shell(command)},
				{Hold: hold, Text: `The check failed. {"criteria_met": [false], "notes": [], "summary": "the check failed"}`},
			}}, executorEnv: []string{"DEPLOY_TOKEN=" + deployToken},
				// Unconfined, the run has the secret itself: a sandboxed run
				// holds a relay's placeholder in its place.
				env: []string{"AMPFLOW_AGENTS_EXECUTOR_SANDBOX=off"}})
			id := map[string]string{"codex": "T-2026-871", "claude": "T-2026-872"}[c.cli]
			s.api.startTask(id, lowRiskPlan(s.repo))

			logs := exec.Command(binary, "task", "logs", id, "-f", "-o", "json")
			logs.Env = append(os.Environ(), "AMPFLOW_API_URL=http://"+s.p.api)
			out, err := logs.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := logs.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = logs.Process.Kill(); _ = logs.Wait() })
			found := make(chan ssot.TranscriptEntry, 1)
			go func() {
				sc := bufio.NewScanner(out)
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for sc.Scan() {
					var e ssot.TranscriptEntry
					if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == ssot.TranscriptToolResult && strings.Contains(e.Text, "TRANSCRIPT-OUT") {
						found <- e
						return
					}
				}
			}()
			var e ssot.TranscriptEntry
			select {
			case e = <-found:
			case <-time.After(4 * time.Minute):
				t.Fatalf("no tool result in task logs -f within 4 minutes\n%s", s.p.output())
			}
			if e.ExitCode == nil || *e.ExitCode != 3 || !e.IsError {
				t.Errorf("tool result %+v: want exit code 3, an error", e)
			}
			if strings.Contains(e.Text, deployToken) || !strings.Contains(e.Text, "key=***") {
				t.Errorf("the secret the agent printed is not masked: %q", e.Text)
			}
			if st := s.api.state(id); st.Status != "in_progress" && st.Status != "dispatched" {
				t.Errorf("the run is over already (%s): the model holds its reply", st.Status)
			}

			tab := newBrowser(t).session()
			tab.open("http://" + s.p.api + "/tasks/" + id)
			tab.until("the failed command on the task page", time.Minute,
				`[...document.querySelectorAll("#transcript-entries li")].some(li => li.textContent.includes("exit 3") && li.textContent.includes("TRANSCRIPT-OUT"))`)
			if page := evalIn[string](tab, `document.getElementById("transcript").innerText`); strings.Contains(page, deployToken) {
				t.Error("the dashboard shows the secret")
			}
			tab.until("the now line", 10*time.Second, `document.getElementById("transcript-now").textContent.startsWith("Now:")`)

			release()
			s.api.awaitResult(id, 3*time.Minute)
			history := s.api.text("/v1/tasks/" + id + "/history")
			if !strings.Contains(history, "1 command failed: `") || !strings.Contains(history, "exit 3") {
				t.Errorf("the task_result does not name the failed command:\n%s", history)
			}
			if tr := s.api.text("/v1/tasks/" + id + "/transcript?limit=1000"); strings.Contains(tr, deployToken) || strings.Contains(tr, runnerKey) {
				t.Error("the transcript holds a secret")
			}
		})
	}
}
