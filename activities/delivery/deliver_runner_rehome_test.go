package delivery

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// fakeClaudeExecutor keeps its first input line (the prompt) in
// $PROMPTS, commits one line to work.txt and reports done.
const fakeClaudeExecutor = `#!/bin/sh
read -r line
printf '%s\n' "$line" >> "$PROMPTS"
printf '%s\n' "$*" >> "$PROMPTS"
echo "run $$" >> work.txt
git add work.txt && git commit -q -m "work $$"
echo '{"type":"system","subtype":"init","session_id":"sess-'"$$"'"}'
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"sess-'"$$"'","total_cost_usd":0.01,"result":"done {\"criteria_met\": [true], \"notes\": [], \"summary\": \"ok\"}"}'
`

// readingTranscripts is a transcript store that also reads.
type readingTranscripts struct {
	fakeTranscripts
	earlier []ssot.TranscriptEntry
}

func (r *readingTranscripts) Transcript(_ context.Context, _ string, f ssot.TranscriptFilter) ([]ssot.TranscriptEntry, error) {
	var out []ssot.TranscriptEntry
	for _, e := range r.earlier {
		if e.Seq > f.After && (f.Role == "" || e.Role == f.Role) {
			out = append(out, e)
		}
	}
	return out, nil
}

// TestRunnerRehome plays two runner hosts on one repository given by
// URL: the executor's run on host a pushes the task branch back to the
// URL; the task's re-homed run on host b makes its checkout from that
// branch, starts a new session primed with the transcript so far, and
// pushes its own work back.
func TestRunnerRehome(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	work := gittest.NewRepo(t, "main")
	origin := filepath.Join(dir, "origin.git")
	gittest.Git(t, dir, "clone", "-q", "--bare", work, origin)
	url := "file://" + origin
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte(fakeClaudeExecutor), 0o755); err != nil {
		t.Fatal(err)
	}
	prompts := filepath.Join(dir, "prompts")
	t.Setenv("PROMPTS", prompts)
	for _, v := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
		t.Setenv(v, "t")
	}
	for _, v := range []string{"GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"} {
		t.Setenv(v, "t@t")
	}
	host := func(name string, tr TranscriptStore) *Delivery {
		data := filepath.Join(dir, name)
		git := &activities.Git{Mirrors: activities.MirrorsDir(data)}
		return &Delivery{Submit: &fakeSubmitter{}, Git: git, Pusher: &activities.Pusher{Git: git}, Host: name, Transcripts: tr,
			Executor: activities.AgentDelivery{Mode: config.AgentModeRunner, Runner: "claude", Command: []string{bin}, WorkDir: data,
				Env:     []string{"PROMPTS", "GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"},
				Timeout: time.Minute, IdleTimeout: time.Minute}}
	}
	dispatch := func(d *Delivery, rehome *activities.Rehome) string {
		t.Helper()
		m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-001", time.Now(), &amp.TaskDispatch{Description: "add work", Repo: url,
			Branch: "feature/x", RiskLevel: amp.RiskLow, Subtasks: []amp.Subtask{{SubtaskID: "S1", Description: "s", EstimatedLines: 1}},
			AcceptanceCriteria: []string{"c"}})
		if _, err := d.Deliver(t.Context(), activities.DeliverInput{Message: m, Repo: url, Branch: "feature/x", Rehome: rehome}); err != nil {
			t.Fatalf("delivery on %s: %v", d.Host, err)
		}
		return strings.TrimSpace(gittest.Git(t, origin, "rev-parse", "refs/heads/feature/x"))
	}

	a := host("host-a", &fakeTranscripts{})
	first := dispatch(a, nil)
	if first == "" {
		t.Fatal("the run on host-a did not push the task branch back to the URL")
	}
	tr := &readingTranscripts{earlier: []ssot.TranscriptEntry{
		{Seq: 1, Role: "executor", Run: 1, Kind: ssot.TranscriptToolCall, Tool: "Edit", Text: `{"file":"work.txt"}`},
		{Seq: 2, Role: "reviewer", Run: 1, Kind: ssot.TranscriptText, Text: "the reviewer's own words"},
		{Seq: 3, Role: "executor", Run: 1, Kind: ssot.TranscriptResult, Text: "added the first line"},
	}}
	b := host("host-b", tr)
	seen := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	second := dispatch(b, &activities.Rehome{From: "host-a", SeenAt: seen})
	if second == first {
		t.Fatal("the re-homed run on host-b did not push its work back")
	}
	if parent := strings.TrimSpace(gittest.Git(t, origin, "rev-parse", second+"^")); parent != first {
		t.Errorf("host-b's commit has parent %s, want host-a's %s: the checkout did not start from the pushed branch", parent, first)
	}
	got, _ := os.ReadFile(prompts)
	runs := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(runs) != 4 {
		t.Fatalf("prompts:\n%s\nwant two runs", got)
	}
	if strings.Contains(runs[1], "--resume") || strings.Contains(runs[3], "--resume") {
		t.Errorf("a run resumed a session: %q, %q", runs[1], runs[3])
	}
	for _, want := range []string{"host host-a, which ran it before, is gone (last seen 2026-11-28T09:30:00Z)", "added the first line", "tool_call Edit"} {
		if !strings.Contains(runs[2], want) {
			t.Errorf("the re-homed run's prompt lacks %q:\n%s", want, runs[2])
		}
	}
	if strings.Contains(runs[2], "the reviewer's own words") {
		t.Error("the executor's summary holds the reviewer's transcript")
	}
	if strings.Contains(runs[0], "moved to a new machine") {
		t.Error("the first run's prompt says it moved")
	}
}

// TestDeliverLocalRunnerNamesHost: a runner delivery tried as a local
// activity is refused naming the worker's host, whose queue the task's
// runs then go to.
func TestDeliverLocalRunnerNamesHost(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	d := &Delivery{Host: "host-a", Executor: activities.AgentDelivery{Mode: config.AgentModeRunner, Runner: "codex", WorkDir: t.TempDir()}}
	_, err := s.NewTestActivityEnvironment().ExecuteLocalActivity(d.Deliver, activities.DeliverInput{Message: testDispatch(t)})
	var app *temporal.ApplicationError
	var detail activities.NeedsActivityDetail
	if !errors.As(err, &app) || app.Type() != activities.ErrNeedsActivity || app.Details(&detail) != nil {
		t.Fatalf("runner in a local activity: %v, want %s with a detail", err, activities.ErrNeedsActivity)
	}
	if detail.Host != "host-a" || detail.Mode != config.AgentModeRunner {
		t.Errorf("detail %+v, want runner mode on host-a", detail)
	}
}
