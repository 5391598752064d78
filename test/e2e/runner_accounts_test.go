package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
)

// TestRunnerAccountFailover: the Codex executor has two accounts, a and
// b, each its own API key. The model answers a's key with the ChatGPT
// backend's usage limit, resetting in two hours: Codex says when, ampflow
// reads it, rests a until then, and the run goes on at once on b,
// resuming the session. The timeline keeps the note; the task ends done.
func TestRunnerAccountFailover(t *testing.T) {
	const keyA, keyB = "sk-account-a-e2e", "sk-account-b-e2e"
	reset := time.Now().Add(2 * time.Hour)
	limit := fakemodel.Limited(fakemodel.Responses, reset)
	limit.Key = keyA
	commit := codexCommit("hello", "add hello.txt")
	commit.Key = keyB
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"codex", []fakemodel.Turn{
			limit,
			commit,
			{Key: keyB, Text: `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt on account b"}`},
		}},
		reviewer: runner{"claude", []fakemodel.Turn{
			{Text: `Right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "it says hello"}]}`},
		}},
		env: []string{
			`AMPFLOW_AGENTS_EXECUTOR_ACCOUNTS=[{"name":"a","env":["FAKE_OPENAI_KEY=$E2E_KEY_A"]},{"name":"b","env":["FAKE_OPENAI_KEY=$E2E_KEY_B"]}]`,
			"E2E_KEY_A=" + keyA, "E2E_KEY_B=" + keyB,
		},
	})
	const id = "T-2026-943"
	s.api.startTask(id, lowRiskPlan(s.repo))
	st := s.ended(id)
	if st.Status != task.StatusDone {
		t.Fatalf("task %s: status %s (%s), want done\n%s", id, st.Status, st.LastError, s.p.output())
	}
	var notes []string
	for _, e := range st.Timeline {
		if e.Kind == "account" {
			notes = append(notes, e.Note)
		}
	}
	// Codex names the reset to the minute, in the machine's zone.
	want := "account a of the executor rests until " + reset.UTC().Format("15:04 MST") + " (usage limit); the run goes on at once with account b"
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("account notes %q, want %q", notes, want)
	}
	reqs := s.executor.AgentRequests()
	if len(reqs) != 3 || reqs[0].Key() != keyA || reqs[0].Turn != 0 {
		t.Fatalf("codex made %d model requests, want 3: the first on account a, at its limit", len(reqs))
	}
	for _, r := range reqs[1:] {
		if r.Key() != keyB {
			t.Errorf("a request after the limit used key %q, want b's", r.Key())
		}
	}
	if got := git(t, s.repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
	if strings.Contains(s.p.output(), keyA) || strings.Contains(s.p.output(), keyB) {
		t.Error("an account's key reached dev's log")
	}
}
