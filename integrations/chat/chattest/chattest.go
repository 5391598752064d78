package chattest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
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
func Opened(d decision.Decision) activities.NotifyInput {
	return activities.NotifyInput{TaskID: d.Subject, Event: activities.NoticeDecisionOpened, Status: task.StatusAwaitingAdmin, Decision: &d}
}

// Closed is the notice of d being decided as o.
func Closed(d decision.Decision, o decision.Outcome) activities.NotifyInput {
	return activities.NotifyInput{TaskID: d.Subject, Event: activities.NoticeDecisionClosed, Status: task.StatusDispatched, Decision: &d, Outcome: &o}
}

// Decider fakes the workflows: the first decision on an id wins, later
// ones are refused the way the workflow refuses them.
type Decider struct {
	// PendingDecisions is what Pending answers.
	PendingDecisions []decision.Decision

	mu      sync.Mutex
	in      []decision.Answer
	decided map[string]decision.Outcome
}

// Decide records in and decides, unless the decision was taken before.
func (f *Decider) Decide(_ context.Context, taskID string, in decision.Answer) (task.DecideResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in = append(f.in, in)
	if f.decided == nil {
		f.decided = map[string]decision.Outcome{}
	}
	if o, ok := f.decided[in.DecisionID]; ok {
		return task.DecideResult{}, &task.Error{Code: task.CodeConflict, Message: fmt.Sprintf(
			"decision %s already decided by %s via %s at %s (%s)", o.DecisionID, o.By, o.Channel, o.At.Format(time.RFC3339), o.Option)}
	}
	o := decision.Outcome{DecisionID: in.DecisionID, Option: in.Option, Note: in.Note, By: in.By, Channel: in.Channel, At: RaisedAt.Add(time.Minute)}
	f.decided[in.DecisionID] = o
	return task.DecideResult{Outcome: o, Status: task.StatusDispatched}, nil
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

// Tokens returns the button tokens of a posted decision in option order.
func Tokens[R any](s *chat.State[R], d decision.Decision) []string {
	out := make([]string, len(d.Options))
	for tok, btn := range s.Buttons {
		for i, o := range d.Options {
			if btn.DecisionID == d.ID && btn.Option == o.ID {
				out[i] = tok
			}
		}
	}
	return out
}
