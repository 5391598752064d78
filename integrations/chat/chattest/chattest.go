package chattest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/chat"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Golden compares got with testdata/name, or rewrites the file under
// -update.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendering; run with -update if intended.\ngot:\n%s", path, got)
	}
}

// Call is one request a fake chat API (slacktest, telegramtest)
// received: its method, its form fields (the first value of each), its
// JSON body when it sent one, when it came and, for a new message, the id
// the fake gave it (Telegram's message_id, Slack's ts).
type Call struct {
	Method string
	Form   map[string]string
	JSON   map[string]any
	At     time.Time
	NewID  string
}

// SSOT opens a fresh SSOT on SQLite in a temporary directory, closed when
// the test ends: where a test bot keeps its state.
func SSOT(t testing.TB) *ssot.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := ssot.Open(ctx, filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// WaitFor polls cond until it holds or the deadline passes.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Opened is the notice of d being raised.
func Opened(d decision.Decision) notify.Input {
	return notify.Input{TaskID: d.Subject, Event: notify.DecisionOpened, Status: task.StatusAwaitingAdmin, Decision: &d}
}

// Closed is the notice of d being decided as o.
func Closed(d decision.Decision, o decision.Outcome) notify.Input {
	return notify.Input{TaskID: d.Subject, Event: notify.DecisionClosed, Status: task.StatusDispatched, Decision: &d, Outcome: &o}
}

// Notice is the notice ev about d: progress, reminder or escalated.
func Notice(ev notify.Event, d decision.Decision) notify.Input {
	return notify.Input{TaskID: d.Subject, Event: ev, Status: task.StatusAwaitingApproval, Decision: &d}
}

// Decider fakes the workflows: the first decision on an id wins, later
// ones are refused the way the workflow refuses them. A decision listed
// in PendingDecisions is answered by its rules: an answer must carry its
// digest, and where it requires more than one approval, approvals are
// counted (once per admin) until the quorum is reached.
type Decider struct {
	// PendingDecisions is what Pending answers.
	PendingDecisions []decision.Decision

	mu      sync.Mutex
	in      []decision.Answer
	decided map[string]decision.Outcome
}

// Decide records in and decides, unless the decision was taken before.
func (f *Decider) Decide(_ context.Context, subject string, in decision.Answer) (task.DecideResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in = append(f.in, in)
	if f.decided == nil {
		f.decided = map[string]decision.Outcome{}
	}
	if o, ok := f.decided[in.DecisionID]; ok {
		return task.DecideResult{}, &task.Error{Code: task.CodeDecided, Message: fmt.Sprintf(
			"decision %s already decided by %s via %s at %s (%s)", o.DecisionID, o.By, o.Channel, o.At.Format(time.RFC3339), o.Option)}
	}
	o := decision.Outcome{DecisionID: in.DecisionID, Subject: subject, Option: in.Option, Note: in.Note, By: in.By, Channel: in.Channel, At: RaisedAt.Add(time.Minute)}
	for i := range f.PendingDecisions {
		d := &f.PendingDecisions[i]
		if d.ID != in.DecisionID {
			continue
		}
		if d.Subject != subject {
			return task.DecideResult{}, task.Errorf(task.CodeNotFound, "decision %s: not a decision of %s", in.DecisionID, subject)
		}
		if d.Digest != in.Digest {
			return task.DecideResult{}, task.Errorf(task.CodeStaleDecision, "digest: decision %s is no longer what was shown; read it again", d.ID)
		}
		if in.Option == decision.OptApprove && d.Required > 1 {
			if !slices.ContainsFunc(d.Approvals, func(a decision.Approval) bool { return a.By == in.By }) {
				d.Approvals = append(d.Approvals, decision.Approval{By: in.By, Channel: in.Channel, At: o.At, Note: in.Note})
			}
			if len(d.Approvals) < d.Required {
				open, p := *d, d.Progress()
				open.Approvals = slices.Clone(d.Approvals)
				return task.DecideResult{Decision: &open, Progress: &p, Status: task.StatusAwaitingApproval}, nil
			}
			o.Approvers = slices.Clone(d.Approvals)
		}
		o.Kind, o.Digest = d.Kind, d.Digest
		f.PendingDecisions = slices.Delete(f.PendingDecisions, i, i+1)
		break
	}
	f.decided[in.DecisionID] = o
	return task.DecideResult{Outcome: o, Status: task.StatusDispatched}, nil
}

// Change replaces an open decision, as a workflow does when what it asks
// changes: the same id with a new digest.
func (f *Decider) Change(d decision.Decision) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.PendingDecisions {
		if f.PendingDecisions[i].ID == d.ID {
			f.PendingDecisions[i] = d
			return
		}
	}
	f.PendingDecisions = append(f.PendingDecisions, d)
}

// Pending returns PendingDecisions.
func (f *Decider) Pending(context.Context) ([]decision.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]decision.Decision(nil), f.PendingDecisions...), nil
}

// Inputs returns every Decide input so far.
func (f *Decider) Inputs() []decision.Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]decision.Answer(nil), f.in...)
}

// Decisions returns the decisions taken, by decision id.
func (f *Decider) Decisions() map[string]decision.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]decision.Outcome{}
	for k, v := range f.decided {
		out[k] = v
	}
	return out
}

// Tokens returns the button tokens of a posted decision in option order,
// from the buttons its bot keeps (chat.Posts.Buttons).
func Tokens(buttons map[string]chat.Button, d decision.Decision) []string {
	out := make([]string, len(d.Options))
	for tok, btn := range buttons {
		for i, o := range d.Options {
			if btn.DecisionID == d.ID && btn.Option == o.ID {
				out[i] = tok
			}
		}
	}
	return out
}
