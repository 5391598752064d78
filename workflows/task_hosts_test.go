package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// hostQueue is the queue of host's runs in the test environment.
func hostQueue(host string) string { return activities.HostQueue("default-test-taskqueue", host) }

// runners makes the task's policy say its roles run in runner mode.
func runners(in *task.Input) { in.Policy.Runners = true }

func timelineNotes(st task.State, kind string) []string {
	var out []string
	for _, e := range st.Timeline {
		if e.Kind == kind {
			out = append(out, e.Note)
		}
	}
	return out
}

// TestHostAffinity checks that a task's runs, its rejection rounds' and
// the reviewer's, all go to the queue of the host that first took them.
func TestHostAffinity(t *testing.T) {
	t.Run("Pinned", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), runners)
		h.runnerHost = "host-a"
		end := h.rejectRound(0)
		h.round(end + 10*time.Second)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		if len(h.deliverQueues) != 4 {
			t.Fatalf("deliveries on %v, want 4", h.deliverQueues)
		}
		for i, q := range h.deliverQueues {
			if q != hostQueue("host-a") {
				t.Errorf("delivery %d (%s) on queue %s, want %s", i, h.delivered[i].Type, q, hostQueue("host-a"))
			}
			if h.deliverIns[i].Rehome != nil {
				t.Errorf("delivery %d marked re-homed: %+v", i, h.deliverIns[i].Rehome)
			}
		}
		if notes := timelineNotes(h.state(), "host"); len(notes) != 1 || notes[0] != "runs on host host-a" {
			t.Errorf("host timeline %q, want one note that it runs on host-a", notes)
		}
		if len(h.cleanups) != 1 || h.cleanups[0].queue != hostQueue("host-a") {
			t.Errorf("worktree cleanups %+v, want one on host-a's queue", h.cleanups)
		}
	})
	t.Run("CleanupHostGone", func(t *testing.T) {
		// The host dies once the task is approved: its worktrees stay,
		// and the task ends all the same.
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), runners)
		h.runnerHost = "host-a"
		gone := false
		h.hostGone = func(q string) bool { return gone && q == hostQueue("host-a") }
		end := h.round(0)
		h.at(end-500*time.Millisecond, func() { gone = true })
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		want := "the runner worktrees are left on host host-a, which did not take their removal within 2m"
		if notes := timelineNotes(h.state(), "worktree"); len(notes) != 1 || notes[0] != want {
			t.Errorf("worktree timeline %q, want %q", notes, want)
		}
	})
	t.Run("Unpinned", func(t *testing.T) {
		// Command-mode agents name no host: their runs go to any worker.
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		h.commandAgents = true
		h.round(0)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		for i, q := range h.deliverQueues {
			if q != "default-test-taskqueue" {
				t.Errorf("delivery %d on queue %s, want the shared queue", i, q)
			}
		}
		if hasTimeline(h.state(), "host") {
			t.Error("a host note for a task with no runner host")
		}
	})
}

// TestRehome checks that a run its host does not take in time (the
// schedule-to-start timeout of the host's queue) goes to another host,
// which starts afresh; that the timeline says so; and that the task's
// later runs stay on the new host.
func TestRehome(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.runnerHost, h.rehomeTo = "host-a", "host-b"
	seen := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	h.goneSeen = seen
	gone := false
	h.hostGone = func(q string) bool { return gone && q == hostQueue("host-a") }
	end := h.rejectRound(0)
	// host-a dies after the first round: the redispatch comes back.
	h.at(end-500*time.Millisecond, func() { gone = true })
	h.round(end + 10*time.Second)
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("status %s, want done", res.Status)
	}
	want := []string{hostQueue("host-a"), hostQueue("host-a"), hostQueue("host-a"), hostQueue("host-b"), hostQueue("host-b")}
	if strings.Join(h.deliverQueues, " ") != strings.Join(want, " ") {
		t.Fatalf("deliveries on %v, want %v", h.deliverQueues, want)
	}
	redispatch := h.deliverIns[2]
	if redispatch.Message.Type != amp.TypeTaskDispatch || redispatch.Rehome == nil || redispatch.Rehome.From != "host-a" || !redispatch.Rehome.SeenAt.Equal(seen) {
		t.Errorf("the re-homed dispatch: %s, rehome %+v; want the dispatch marked re-homed from host-a", redispatch.Message.Type, redispatch.Rehome)
	}
	if review := h.deliverIns[3]; review.Message.Type != amp.TypeReviewRequest || review.Rehome == nil {
		t.Errorf("the reviewer's first run on host-b: %s, rehome %+v; want it marked re-homed", review.Message.Type, review.Rehome)
	}
	notes := timelineNotes(h.state(), "host")
	wantNote := "re-homed from host host-a to host host-b: host-a not seen since 2026-11-28T09:30:00Z"
	if len(notes) != 2 || notes[1] != wantNote {
		t.Errorf("host timeline %q, want the re-home note %q", notes, wantNote)
	}
}

// TestRehomeLaterRuns checks that after the re-homed run, the role's
// next run on the new host resumes there, unmarked.
func TestRehomeLaterRuns(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.runnerHost, h.rehomeTo = "host-a", "host-b"
	// host-a is gone from the start: the first dispatch comes back.
	h.hostGone = func(q string) bool { return q == hostQueue("host-a") }
	end := h.rejectRound(0)
	h.round(end + 10*time.Second)
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("status %s, want done", res.Status)
	}
	var marked []bool
	for i, in := range h.deliverIns {
		if h.deliveredOn[i] == hostQueue("host-b") {
			marked = append(marked, in.Rehome != nil)
		}
	}
	// dispatch, review, redispatch, review on host-b: only the first of
	// each role starts afresh.
	if len(marked) != 4 || !marked[0] || !marked[1] || marked[2] || marked[3] {
		t.Errorf("re-homed marks of the runs on host-b: %v, want [true true false false]", marked)
	}
	if notes := timelineNotes(h.state(), "host"); len(notes) != 2 || !strings.Contains(notes[1], "no run taken for") {
		t.Errorf("host timeline %q, want the re-home note without a last sighting", notes)
	}
}
