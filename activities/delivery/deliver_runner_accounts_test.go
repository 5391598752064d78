package delivery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// fakeClaudeAccounts is a claude that hits its usage limit on key-a and
// reviews on any other key, writing the key it ran with and its
// arguments to $RUNS.
const fakeClaudeAccounts = `#!/bin/sh
echo "$ANTHROPIC_API_KEY $*" >> "$RUNS"
if [ "$ANTHROPIC_API_KEY" = "sk-test-key-a" ]; then
  echo '{"type":"system","subtype":"init","session_id":"sess-a"}'
  echo "Claude AI usage limit reached|RESET" >&2
  exit 1
fi
echo '{"type":"system","subtype":"init","session_id":"sess-b"}'
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"sess-b","total_cost_usd":0.25,"result":"{\"verdict\":\"approve\",\"summary\":\"ok\"}"}'
`

type noteLog struct {
	mu    sync.Mutex
	notes []string
}

func (n *noteLog) Heartbeat(_ context.Context, _ string, in task.HeartbeatInput) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, in.Note)
	return nil
}

type accountCount struct {
	countLog
	byAccount map[string]float64
}

func (c *accountCount) CountAccountSpend(_ string, _ amp.Role, account string, usd float64) {
	c.byAccount[account] += usd
}

// TestRunnerFailsOverToNextAccount: a run at account a's usage limit
// rests a until its reset and the delivery runs again at once on b,
// resuming the session; b's spend is counted to b; a next delivery
// starts on b; with both resting, the delivery waits for the earliest
// reset without starting the CLI.
func TestRunnerFailsOverToNextAccount(t *testing.T) {
	dir := t.TempDir()
	repo, head := oneCommitRepo(t, dir)
	bin := filepath.Join(dir, "claude")
	// The reset is in the script: a value of the environment would be
	// masked in the CLI's stderr.
	reset := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	if err := os.WriteFile(bin, []byte(strings.Replace(fakeClaudeAccounts, "RESET", fmt.Sprint(reset.Unix()), 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	t.Setenv("RUNS", runs)
	t.Setenv("TEST_KEY_A", "sk-test-key-a")
	t.Setenv("TEST_KEY_B", "sk-test-key-b")
	notes, metrics := &noteLog{}, &accountCount{byAccount: map[string]float64{}}
	sub := &fakeSubmitter{}
	d := &Delivery{Submit: sub, Heartbeats: notes, Metrics: metrics, Accounts: &Accounts{},
		Reviewer: activities.AgentDelivery{Mode: config.AgentModeRunner, Runner: "claude", Command: []string{bin}, WorkDir: filepath.Join(dir, "data"),
			Env: []string{"RUNS"}, Timeout: time.Minute, IdleTimeout: time.Minute,
			Accounts: []config.Account{{Name: "a", Env: []string{"ANTHROPIC_API_KEY=$TEST_KEY_A"}}, {Name: "b", Env: []string{"ANTHROPIC_API_KEY=$TEST_KEY_B"}}}}}
	review := func() error {
		m := amp.NewMessage(amp.RoleCoordinator, amp.RoleReviewer, "T-2026-001", time.Now(), &amp.ReviewRequest{})
		_, err := d.Deliver(t.Context(), activities.DeliverInput{Message: m, Repo: repo, Commit: head})
		return err
	}
	if err := review(); err != nil {
		t.Fatalf("delivery: %v", err)
	}
	ran, _ := os.ReadFile(runs)
	lines := strings.Split(strings.TrimSpace(string(ran)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "sk-test-key-a ") || !strings.HasPrefix(lines[1], "sk-test-key-b ") {
		t.Fatalf("runs:\n%s\nwant one on account a, then one on b", ran)
	}
	if !strings.Contains(lines[1], "sess-a") {
		t.Errorf("the run on b does not resume a's session: %s", lines[1])
	}
	if n := len(sub.got); n == 0 || !strings.Contains(string(sub.got[n-1]), `"type":"review_verdict"`) {
		t.Errorf("the last of %d messages submitted is not the verdict", n)
	}
	want := fmt.Sprintf("account a of the reviewer rests until %s (usage limit); the run goes on at once with account b", reset.UTC().Format("15:04 MST"))
	if !slicesContains(notes.notes, want) {
		t.Errorf("task notes %q, want %q", notes.notes, want)
	}
	if metrics.byAccount["b"] != 0.25 || metrics.byAccount["a"] != 0 {
		t.Errorf("spend by account %v, want b $0.25", metrics.byAccount)
	}
	if got := d.Accounts.SpentToday(); len(got) != 1 || got[0].Account != "b" || got[0].USD != 0.25 {
		t.Errorf("spent today %+v, want b $0.25", got)
	}
	t.Run("NextRunTakesFreeAccount", func(t *testing.T) {
		_ = os.Remove(runs)
		if err := review(); err != nil {
			t.Fatal(err)
		}
		if ran, _ := os.ReadFile(runs); !strings.HasPrefix(string(ran), "sk-test-key-b ") || strings.Count(string(ran), "\n") != 1 {
			t.Errorf("runs:\n%s\nwant one, on b (a rests)", ran)
		}
	})
	t.Run("AllResting", func(t *testing.T) {
		_ = os.Remove(runs)
		d.Accounts.Rest(amp.RoleReviewer, "b", reset.Add(-time.Hour), "rate limit")
		err := review()
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != activities.ErrRateLimited {
			t.Fatalf("delivery with all resting: %v, want %s", err, activities.ErrRateLimited)
		}
		var f activities.DeliveryFailure
		_ = app.Details(&f)
		if !f.ResetAt.Equal(reset.Add(-time.Hour)) || !strings.HasPrefix(f.Summary, "all 2 accounts of the reviewer rest until") {
			t.Errorf("failure %+v, want all resting until b's reset", f)
		}
		if _, err := os.Stat(runs); err == nil {
			t.Error("the CLI ran with every account resting")
		}
	})
}

// oneCommitRepo makes a repository under dir with one empty commit on
// main, and returns its path and that commit.
func oneCommitRepo(t *testing.T, dir string) (repo, head string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo = filepath.Join(dir, "repo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return repo, strings.TrimSpace(string(out))
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
