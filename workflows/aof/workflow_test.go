package aof

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ampflow/ampflow/amp/task"
)

func TestCreated(t *testing.T) {
	h := newHarness(t)
	var sync *reply
	h.at(time.Second, func() { sync = h.update(UpdateSync, SyncInput{}) })
	h.at(time.Minute, func() {
		tk := sync.result(t).Task
		if tk.Status != StatusReady || tk.Rev != 1 || !tk.CreatedAt.Equal(t0) {
			t.Errorf("task %+v", tk)
		}
		if len(h.eventsOf(EventTaskCreated)) != 1 {
			t.Errorf("events %v", h.events)
		}
	})
	h.run()
}

// TestActors: the event log names who acted, the coordinator who created
// and dispatched, not the assignee.
func TestActors(t *testing.T) {
	h := newHarness(t, func(tk *Task) { tk.CreatedBy = "planner" })
	h.at(time.Second, func() { h.update(UpdateDispatch, DispatchInput{AgentID: agent, By: "lead"}) })
	h.at(time.Minute, func() {
		created := h.eventsOf(EventTaskCreated)
		moved := h.eventsOf(EventTaskTransitioned)
		if len(created) != 1 || created[0].Actor != "planner" {
			t.Errorf("created by %+v, want planner", created)
		}
		if len(moved) != 1 || moved[0].Actor != "lead" {
			t.Errorf("dispatched by %+v, want lead", moved)
		}
	})
	h.run()
}

// TestCompletionDone is example 1: a done report waits for the session's
// end, which moves the task to review and asks the admins.
func TestCompletionDone(t *testing.T) {
	for _, c := range []struct {
		name   string
		review bool
		want   []string
	}{
		{"ReviewRequired", true, []string{"ready>in_progress:dispatched to swe-backend", "in_progress>review:session_end_done"}},
		{"NoReview", false, []string{"ready>in_progress:dispatched to swe-backend", "in_progress>review:session_end_done", "review>done:session_end_done"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(tk *Task) { tk.Metadata.ReviewRequired = c.review })
			var disp, hb, rep, again, end *reply
			h.at(time.Second, func() { disp = h.dispatch(0) })
			h.at(time.Minute, func() {
				tk := disp.result(t).Task
				if tk.Status != StatusInProgress || tk.Run.AgentID != agent || tk.Heartbeat.BeatCount != 1 ||
					!tk.Heartbeat.ExpiresAt.Equal(t0.Add(time.Second+DefaultTTL)) {
					t.Errorf("dispatched %+v %+v", tk.Run, tk.Heartbeat)
				}
				var run RunInfo
				if !h.artifact(t, ArtifactRun, &run) || run.Status != RunRunning || !h.artifact(t, ArtifactHeartbeat, nil) {
					t.Errorf("run.json %+v", run)
				}
				hb = h.update(UpdateHeartbeat, HeartbeatInput{AgentID: agent})
			})
			h.at(2*time.Minute, func() {
				var b Heartbeat
				if hb.result(t).Task.Heartbeat.BeatCount != 2 || !h.artifact(t, ArtifactHeartbeat, &b) || b.BeatCount != 2 {
					t.Errorf("heartbeat %+v", b)
				}
				rep = h.send(completion(OutcomeDone, t0.Add(2*time.Minute)), 0)
			})
			h.at(3*time.Minute, func() {
				res := rep.result(t)
				if !res.Changed || res.Task.Status != StatusInProgress {
					t.Errorf("report %+v: the transition waits for the session's end", res)
				}
				var rr RunResult
				if !h.artifact(t, ArtifactResult, &rr) || rr.Outcome != OutcomeDone || rr.AgentID != agent || !rr.CompletedAt.Equal(t0.Add(2*time.Minute)) {
					t.Errorf("run_result.json %+v", rr)
				}
				if len(h.eventsOf(EventTaskCompleted)) != 1 {
					t.Error("no task.completed")
				}
				again = h.send(completion(OutcomeDone, t0.Add(2*time.Minute)), 0)
			})
			h.at(4*time.Minute, func() {
				if again.result(t).Changed || len(h.eventsOf(EventTaskCompleted)) != 1 {
					t.Error("a repeated report changed the task")
				}
				end = h.update(UpdateSessionEnd, SessionEndInput{})
			})
			h.at(5*time.Minute, func() {
				res := end.result(t)
				if got := h.transitions(t); !slices.Equal(got, c.want) {
					t.Errorf("transitions %v, want %v", got, c.want)
				}
				if c.review {
					if res.Task.Status != StatusReview || res.Task.Review == nil || res.Task.Review.Kind != KindReview {
						t.Errorf("task %s review %+v", res.Task.Status, res.Task.Review)
					}
					if len(h.saves) == 0 || len(h.saves[len(h.saves)-1].Decisions) != 1 {
						t.Error("the open review is not saved with the decisions")
					}
				} else if res.Task.Status != StatusDone {
					t.Errorf("status %s", res.Task.Status)
				}
			})
			h.run()
			if !c.review && !h.env.IsWorkflowCompleted() {
				t.Error("a done task's workflow did not end")
			}
		})
	}
}

func TestCompletionOutcomes(t *testing.T) {
	for _, c := range []struct {
		outcome  Outcome
		blockers []string
		want     Status
	}{
		{OutcomeBlocked, []string{"Awaiting API key"}, StatusBlocked},
		{OutcomeNeedsReview, nil, StatusReview},
		{OutcomePartial, nil, StatusReview},
	} {
		t.Run(string(c.outcome), func(t *testing.T) {
			h := newHarness(t)
			var end *reply
			h.at(time.Second, func() { h.dispatch(0) })
			h.at(time.Minute, func() { h.send(completion(c.outcome, t0, c.blockers...), 0) })
			h.at(2*time.Minute, func() { end = h.update(UpdateSessionEnd, SessionEndInput{AgentID: agent}) })
			h.at(3*time.Minute, func() {
				if st := end.result(t).Task.Status; st != c.want {
					t.Errorf("status %s, want %s", st, c.want)
				}
				if n := len(h.notices); n == 0 {
					t.Error("the admins were not told")
				}
			})
			h.run()
		})
	}
}

func TestSessionEndNoResult(t *testing.T) {
	h := newHarness(t)
	var end *reply
	h.at(time.Second, func() { h.dispatch(0) })
	h.at(time.Minute, func() { end = h.update(UpdateSessionEnd, SessionEndInput{}) })
	h.at(2*time.Minute, func() {
		res := end.result(t)
		if res.Changed || res.Task.Status != StatusInProgress {
			t.Errorf("session end without a result changed the task: %+v", res)
		}
	})
	h.run()
}

// TestStatusUpdate covers examples 3 and 4 and an invalid transition.
func TestStatusUpdate(t *testing.T) {
	at := time.Date(2026, 2, 9, 21, 20, 0, 0, time.UTC)
	upd := func(u StatusUpdate) Message {
		m := msg(TypeStatusUpdate, at)
		u.TaskID, u.AgentID = testTask, agent
		m.Status = &u
		return m
	}
	t.Run("Progress", func(t *testing.T) {
		h := newHarness(t, func(tk *Task) { tk.Body = "Build the users API." })
		var r *reply
		h.at(time.Second, func() {
			r = h.send(upd(StatusUpdate{Progress: "Executed 50/100 test cases", Notes: "No issues found so far"}), 0)
		})
		h.at(time.Minute, func() {
			tk := r.result(t).Task
			line := "- 2026-02-09T21:20:00.000Z Progress: Executed 50/100 test cases | Notes: No issues found so far"
			if tk.Status != StatusReady || !slices.Equal(tk.WorkLog, []string{line}) ||
				tk.Body != "Build the users API.\n\n## Work Log\n\n"+line+"\n" {
				t.Errorf("task %s log %q body %q", tk.Status, tk.WorkLog, tk.Body)
			}
			if len(h.transitions(t)) != 0 {
				t.Error("a progress update transitioned")
			}
		})
		h.run()
	})
	t.Run("Transition", func(t *testing.T) {
		h := newHarness(t)
		var r *reply
		h.at(time.Second, func() { h.dispatch(0) })
		h.at(time.Minute, func() {
			r = h.send(upd(StatusUpdate{Status: StatusBlocked, Blockers: []string{"Test environment unreachable"}, Notes: "Cannot proceed"}), 0)
		})
		h.at(2*time.Minute, func() {
			if st := r.result(t).Task.Status; st != StatusBlocked {
				t.Errorf("status %s", st)
			}
			if got := h.transitions(t); len(got) != 2 || got[1] != "in_progress>blocked:Test environment unreachable" {
				t.Errorf("transitions %v", got)
			}
			if len(h.notices) == 0 || !strings.Contains(h.notices[len(h.notices)-1].Text, "blocked") {
				t.Errorf("notices %+v", h.notices)
			}
		})
		h.run()
	})
	t.Run("InvalidTransition", func(t *testing.T) {
		h := newHarness(t)
		var r *reply
		h.at(time.Second, func() { r = h.send(upd(StatusUpdate{Status: StatusReview, Progress: "all done"}), 0) })
		h.at(time.Minute, func() {
			res := r.result(t)
			if res.Task.Status != StatusReady || len(res.Task.WorkLog) != 1 || !strings.Contains(res.Note, "not a valid transition") {
				t.Errorf("result %+v", res)
			}
		})
		h.run()
	})
	t.Run("SameStatus", func(t *testing.T) {
		h := newHarness(t)
		var r *reply
		h.at(time.Second, func() { r = h.send(upd(StatusUpdate{Status: StatusReady}), 0) })
		h.at(time.Minute, func() {
			if res := r.result(t); res.Changed || res.Task.Rev != 1 {
				t.Errorf("a status update to the status it has changed the task: %+v", res)
			}
		})
		h.run()
	})
}

// TestStale covers examples 8 and 9: the heartbeat's durable timer fires
// at expiresAt, renewed by each heartbeat.
func TestStale(t *testing.T) {
	ttl := 5 * time.Minute
	t.Run("WithResult", func(t *testing.T) {
		h := newHarness(t)
		h.at(time.Second, func() { h.dispatch(ttl) })
		h.at(time.Minute, func() { h.send(completion(OutcomePartial, t0.Add(time.Minute)), 0) })
		h.at(ttl, func() {
			if st := h.task().Status; st != StatusInProgress {
				t.Errorf("status %s before expiresAt", st)
			}
		})
		h.at(ttl+2*time.Second, func() {
			if got := h.transitions(t); !slices.Equal(got, []string{"ready>in_progress:dispatched to swe-backend", "in_progress>review:stale_heartbeat_partial"}) {
				t.Errorf("transitions %v", got)
			}
		})
		h.run()
	})
	t.Run("Reclaim", func(t *testing.T) {
		h := newHarness(t)
		h.at(time.Second, func() { h.dispatch(ttl) })
		h.at(4*time.Minute, func() { h.update(UpdateHeartbeat, HeartbeatInput{AgentID: agent}) })
		h.at(ttl+2*time.Second, func() {
			if st := h.task().Status; st != StatusInProgress {
				t.Errorf("status %s: the heartbeat at 4m did not renew the run", st)
			}
		})
		h.at(9*time.Minute+2*time.Second, func() {
			tk := h.task()
			if tk.Status != StatusReady || tk.Run.Status != RunExpired {
				t.Errorf("task %s run %+v", tk.Status, tk.Run)
			}
			var run RunInfo
			if !h.artifact(t, ArtifactRun, &run) || run.Status != RunExpired {
				t.Errorf("run.json %+v", run)
			}
			if got := h.transitions(t); len(got) != 2 || got[1] != "in_progress>ready:stale_heartbeat_reclaim" {
				t.Errorf("transitions %v", got)
			}
		})
		h.run()
	})
}

func TestDispatchRefusals(t *testing.T) {
	h := newHarness(t, func(tk *Task) { tk.Status = StatusBacklog })
	var backlog, again, other, hb, stranger, negative, long *reply
	h.at(time.Second, func() {
		backlog = h.dispatch(0)
		negative = h.update(UpdateDispatch, DispatchInput{AgentID: agent, TTLMs: -1})
		long = h.dispatch(MaxTTL + time.Millisecond)
		hb = h.update(UpdateHeartbeat, HeartbeatInput{AgentID: agent})
	})
	h.at(time.Minute, func() {
		backlog.refused(t, CodeInvalidTransition)
		negative.refused(t, task.CodeInvalid)
		long.refused(t, task.CodeInvalid)
		hb.refused(t, CodeNotRunning)
		m := msg(TypeStatusUpdate, t0)
		m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Status: StatusReady}
		h.send(m, 0)
	})
	h.at(2*time.Minute, func() { h.dispatch(0) })
	h.at(3*time.Minute, func() {
		again = h.dispatch(0)
		other = h.update(UpdateDispatch, DispatchInput{AgentID: "swe-qa"})
		stranger = h.update(UpdateHeartbeat, HeartbeatInput{AgentID: "swe-qa"})
	})
	h.at(4*time.Minute, func() {
		if res := again.result(t); res.Changed || res.Task.Heartbeat.BeatCount != 1 {
			t.Errorf("a repeated dispatch changed the run: %+v", res)
		}
		other.refused(t, CodeInvalidTransition)
		stranger.refused(t, CodeNotRunning)
	})
	h.run()
}

// TestStatusUpdateMoves covers the moves an agent's status update makes
// and the ones it may not: in_progress is dispatch's, done and every move
// out of review are the review's.
func TestStatusUpdateMoves(t *testing.T) {
	upd := func(st Status) Message {
		m := msg(TypeStatusUpdate, t0)
		m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Status: st, Notes: "n"}
		return m
	}
	h := newHarness(t, func(tk *Task) { tk.Status = StatusBacklog })
	steps := []struct {
		to       Status
		dispatch bool
		want     Status
	}{
		{to: StatusReady, want: StatusReady},
		{to: StatusBlocked, want: StatusBlocked},
		{to: StatusReady, want: StatusReady},
		{to: StatusInProgress, want: StatusReady}, // work log, no move: dispatch's
		{dispatch: true, want: StatusInProgress},
		{to: StatusReview, want: StatusReview},
		{to: StatusDone, want: StatusReview},    // work log: the review's
		{to: StatusReady, want: StatusReview},   // work log: the review's
		{to: StatusBlocked, want: StatusReview}, // work log: the review's
		{to: StatusBacklog, want: StatusReview},
	}
	for i, s := range steps {
		var r *reply
		h.at(time.Duration(2*i+1)*time.Minute, func() {
			if s.dispatch {
				r = h.dispatch(time.Hour)
			} else {
				r = h.send(upd(s.to), 0)
			}
		})
		h.at(time.Duration(2*i+2)*time.Minute, func() {
			res := r.result(t)
			if res.Task.Status != s.want {
				t.Errorf("step %d: → %s left the task %s, want %s (%s)", i, s.to, res.Task.Status, s.want, res.Note)
			}
		})
	}
	h.at(time.Hour-time.Minute, func() {
		tk := h.task()
		if len(tk.WorkLog) != 5 || tk.Review == nil {
			t.Errorf("work log %q review %v", tk.WorkLog, tk.Review)
		}
		if tk.Run == nil || tk.Heartbeat == nil {
			t.Errorf("the run was not started by dispatch: run %v heartbeat %v", tk.Run, tk.Heartbeat)
		}
		for _, e := range h.eventsOf(EventTaskTransitioned) {
			if p := payloadOf(t, e); p["from"] == string(StatusReview) {
				t.Errorf("a status update moved the task out of review: %v", p)
			}
		}
	})
	h.run()
}

func TestSessionEndOtherAgent(t *testing.T) {
	h := newHarness(t)
	var end *reply
	h.at(time.Second, func() { h.dispatch(0) })
	h.at(time.Minute, func() { h.send(completion(OutcomeDone, t0), 0) })
	h.at(2*time.Minute, func() { end = h.update(UpdateSessionEnd, SessionEndInput{AgentID: "swe-qa"}) })
	h.at(3*time.Minute, func() {
		if res := end.result(t); res.Changed || res.Task.Status != StatusInProgress {
			t.Errorf("another agent's session end applied the result: %+v", res)
		}
	})
	h.run()
}

// TestStatusUpdateInProgress: a status update to in_progress starts no
// run (it would have no heartbeat and never time out): the task stays
// ready, the work log says why, and a dispatch still starts it.
func TestStatusUpdateInProgress(t *testing.T) {
	h := newHarness(t)
	var r, d *reply
	h.at(time.Second, func() {
		m := msg(TypeStatusUpdate, t0)
		m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Status: StatusInProgress, Progress: "started by hand"}
		r = h.send(m, 0)
	})
	h.at(time.Minute, func() {
		res := r.result(t)
		if tk := res.Task; tk.Status != StatusReady || tk.Run != nil || len(tk.WorkLog) != 1 || !strings.Contains(res.Note, "dispatch") {
			t.Errorf("result %+v", res)
		}
		d = h.dispatch(time.Hour)
	})
	h.at(2*time.Minute, func() {
		if tk := d.result(t).Task; tk.Status != StatusInProgress || tk.Heartbeat == nil {
			t.Errorf("dispatch after the update: %s heartbeat %v", tk.Status, tk.Heartbeat)
		}
	})
	h.run()
}

// TestCompletionRefused: a completion report is taken only from the
// agent that runs the task, while it runs; any other is refused and
// changes nothing, a repeat of the taken one is a no-op.
func TestCompletionRefused(t *testing.T) {
	h := newHarness(t)
	var ready, stranger, taken, repeat, late *reply
	other := completion(OutcomeDone, t0)
	other.FromAgent = "swe-qa"
	h.at(time.Second, func() { ready = h.send(completion(OutcomeDone, t0), 0) })
	h.at(time.Minute, func() {
		ready.refused(t, CodeNotRunning)
		if tk := h.task(); tk.Result != nil || tk.Rev != 1 || len(h.eventsOf(EventTaskCompleted)) != 0 {
			t.Errorf("a refused report changed the task: rev %d result %v", tk.Rev, tk.Result)
		}
		h.dispatch(time.Hour)
	})
	h.at(2*time.Minute, func() { stranger = h.send(other, 0) })
	h.at(3*time.Minute, func() {
		stranger.refused(t, CodeNotRunning)
		taken = h.send(completion(OutcomeDone, t0), 0)
	})
	h.at(4*time.Minute, func() {
		if res := taken.result(t); !res.Changed || res.Task.Result == nil || res.Task.Result.AgentID != agent {
			t.Errorf("the running agent's report: %+v", res)
		}
		h.update(UpdateSessionEnd, SessionEndInput{})
	})
	h.at(5*time.Minute, func() {
		repeat = h.send(completion(OutcomeDone, t0), 0)
		late = h.send(completion(OutcomePartial, t0), 0)
	})
	h.at(6*time.Minute, func() {
		if res := repeat.result(t); res.Changed {
			t.Errorf("a repeat changed the task: %+v", res)
		}
		late.refused(t, CodeNotRunning)
		if tk := h.task(); tk.Status != StatusReview || tk.Result.Outcome != OutcomeDone {
			t.Errorf("status %s result %+v", tk.Status, tk.Result)
		}
		if n := len(h.eventsOf(EventTaskCompleted)); n != 1 {
			t.Errorf("%d task.completed, want 1", n)
		}
	})
	h.run()
}

// TestWorkLogBounded: the work log kept in the task (and its body) holds
// the newest lines within its bounds, each line cut, so the state every
// save carries stays small however many updates come.
func TestWorkLogBounded(t *testing.T) {
	h := newHarness(t, func(tk *Task) { tk.Body = "Build it." })
	n := MaxWorkLogLines + 30
	long := strings.Repeat("é", MaxWorkLogLine)
	for i := range n {
		h.at(time.Duration(i+1)*time.Second, func() {
			m := msg(TypeStatusUpdate, t0.Add(time.Duration(i)*time.Second))
			m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Progress: fmt.Sprintf("step %d", i)}
			if i == n-1 {
				m.Status.Notes = long
			}
			h.send(m, 0)
		})
	}
	h.at(time.Hour, func() {
		tk := h.task()
		size := 0
		for _, l := range tk.WorkLog {
			size += len(l)
		}
		if len(tk.WorkLog) > MaxWorkLogLines || size > MaxWorkLogBytes || tk.WorkLogDropped != n-len(tk.WorkLog) {
			t.Errorf("%d lines, %d bytes, %d dropped", len(tk.WorkLog), size, tk.WorkLogDropped)
		}
		last := tk.WorkLog[len(tk.WorkLog)-1]
		if len(last) > MaxWorkLogLine+len(" …") || !utf8.ValidString(last) || !strings.HasPrefix(last, "- 2026-02-09T20:57:09.000Z Progress: step 129 | Notes: éé") {
			t.Errorf("the last line is %d bytes: %.80q", len(last), last)
		}
		if strings.Contains(tk.Body, "Progress: step 0 ") || !strings.HasPrefix(tk.Body, "Build it.\n\n## Work Log\n\n") ||
			strings.Count(tk.Body, "\n- ") != len(tk.WorkLog) {
			t.Errorf("body %.200q… has %d lines", tk.Body, strings.Count(tk.Body, "\n- "))
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, s := range h.saves {
			if n := len(s.Save.Task.Body); n > 2*MaxWorkLogBytes+64<<10 {
				t.Errorf("a save carries a task of %d bytes", n)
			}
		}
	})
	h.run()
}

// TestCompletionWarnings: a report taken with warnings (a missing
// summary file) proceeds, and its task.completed carries them.
func TestCompletionWarnings(t *testing.T) {
	h := newHarness(t)
	h.at(time.Second, func() { h.dispatch(time.Hour) })
	h.at(time.Minute, func() {
		m := completion(OutcomeDone, t0)
		m.Warnings = []string{"payload.summaryRef: no file outputs/summary.md under aof.data_dir"}
		h.send(m, 0)
	})
	h.at(2*time.Minute, func() { h.update(UpdateSessionEnd, SessionEndInput{}) })
	h.at(3*time.Minute, func() {
		evs := h.eventsOf(EventTaskCompleted)
		if len(evs) != 1 {
			t.Fatalf("%d task.completed", len(evs))
		}
		if w, _ := payloadOf(t, evs[0])["warnings"].([]any); len(w) != 1 {
			t.Errorf("task.completed %s", evs[0].Payload)
		}
		if st := h.task().Status; st != StatusReview {
			t.Errorf("status %s: the transition did not proceed", st)
		}
	})
	h.run()
}

// TestSaveInputBounded fills a task to the API's bounds (a 64 KiB body,
// a 64 KiB handoff and completion, 150 status updates of 8 KiB each) and
// measures the largest SaveAOF input: it stays under 768 KiB, far below Temporal's 2 MB
// payload limit.
func TestSaveInputBounded(t *testing.T) {
	const kib = 1 << 10
	text := strings.Repeat("x", 8*kib-64)
	items := slices.Repeat([]string{text}, 7)
	h := newHarness(t, func(tk *Task) { tk.Body = strings.Repeat("b", 64*kib) })
	h.at(time.Second, func() {
		m := handoffMsg()
		m.Handoff.AcceptanceCriteria, m.Handoff.Constraints = items, nil
		h.send(m, 0)
	})
	h.at(2*time.Second, func() { h.dispatch(time.Hour) })
	for i := range 150 {
		h.at(time.Duration(3+i)*time.Second, func() {
			m := msg(TypeStatusUpdate, t0)
			m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Progress: text, Notes: fmt.Sprint(i)}
			h.send(m, 0)
		})
	}
	h.at(5*time.Minute, func() {
		m := completion(OutcomePartial, t0)
		m.Completion.Notes, m.Completion.Blockers = text, items
		h.send(m, 0)
	})
	h.at(6*time.Minute, func() { h.update(UpdateSessionEnd, SessionEndInput{}) })
	h.at(7*time.Minute, func() {
		if st := h.task().Status; st != StatusReview {
			t.Fatalf("status %s", st)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		largest := 0
		for _, s := range h.saves {
			b, _ := json.Marshal(s)
			if len(b) > largest {
				largest = len(b)
				ev, _ := json.Marshal(s.Save.Events)
				ar, _ := json.Marshal(s.Save.Artifacts)
				de, _ := json.Marshal(s.Decisions)
				re, _ := json.Marshal(s.Records)
				t.Logf("%d bytes: task %d, events %d, artifacts %d, decisions %d, records %d", len(b), len(s.Save.Task.Body), len(ev), len(ar), len(de), len(re))
			}
		}
		t.Logf("largest SaveAOF input: %d bytes over %d saves", largest, len(h.saves))
		if largest > 768<<10 {
			t.Errorf("a SaveAOF input of %d bytes", largest)
		}
	})
	h.run()
}
