package delivery

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// Slots bounds the agent CLIs a worker runs at once (runner.slots). A run
// past the bound waits in the worker's queue, the higher task priority
// first, then the one queued first; a run whose activity ends while it
// waits leaves the queue.
type Slots struct {
	mu      sync.Mutex
	size    int
	seq     uint64
	running []*SlotRun
	waiting []*slotWait
	now     func() time.Time
	// changed is closed, and replaced, whenever a run takes a slot,
	// queues or gives its slot back (Changed).
	changed chan struct{}
}

// SlotRun is one run holding or waiting for a slot, as the fleet view
// shows it.
type SlotRun struct {
	TaskID   string   `json:"task_id"`
	Role     amp.Role `json:"role"`
	Runner   string   `json:"runner"`
	Priority int      `json:"priority"`
	// Queued is when the run asked for a slot, Started when it got one
	// (zero while it waits).
	Queued  time.Time `json:"queued_at"`
	Started time.Time `json:"started_at,omitzero"`
	// Step is what the run is doing: the tool it runs, or the kind of its
	// last event; CostUSD what it has cost so far.
	Step    string  `json:"step,omitempty"`
	CostUSD float64 `json:"cost_usd"`
	// Account is the runner's account the run uses
	// (agents.<role>.accounts); empty without accounts.
	Account string `json:"account,omitempty"`
	seq     uint64
}

type slotWait struct {
	run   *SlotRun
	ready chan struct{}
}

// NewSlots is a bound of size runs (at least one).
func NewSlots(size int) *Slots {
	return &Slots{size: max(size, 1), now: time.Now, changed: make(chan struct{})}
}

// Changed is closed at the next change of who holds or waits for a
// slot, so the fleet view is written when it changes, not only on its
// period. A nil Slots never changes.
func (s *Slots) Changed() <-chan struct{} {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// change wakes Changed's readers; s.mu is held.
func (s *Slots) change() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Size is the number of slots.
func (s *Slots) Size() int { return s.size }

// Take waits for a slot for run, calling waiting with the number of runs
// ahead of it at once when it must wait and every second after, and
// returns the run as the slots keep it and the function that gives the
// slot back. It returns
// ctx's error if ctx ends first. A nil Slots has no bound.
func (s *Slots) Take(ctx context.Context, run SlotRun, waiting func(ahead int)) (*SlotRun, func(), error) {
	r := &run
	if s == nil {
		return r, func() {}, nil
	}
	s.mu.Lock()
	s.seq++
	r.seq, r.Queued = s.seq, s.now()
	if len(s.running) < s.size && len(s.waiting) == 0 {
		r.Started = r.Queued
		s.running = append(s.running, r)
		s.change()
		s.mu.Unlock()
		return r, s.releaser(r), nil
	}
	w := &slotWait{run: r, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	sort.SliceStable(s.waiting, func(i, j int) bool { return before(s.waiting[i].run, s.waiting[j].run) })
	s.change()
	s.mu.Unlock()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if ahead := s.ahead(w); ahead >= 0 && waiting != nil {
			waiting(ahead)
		}
		select {
		case <-w.ready:
			return r, s.releaser(r), nil
		case <-ctx.Done():
			s.mu.Lock()
			granted := s.drop(w)
			if !granted {
				s.change()
			}
			s.mu.Unlock()
			if granted {
				s.releaser(r)()
			}
			return r, func() {}, ctx.Err()
		case <-tick.C:
		}
	}
}

// before orders the queue: higher priority, then earlier.
func before(a, b *SlotRun) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.seq < b.seq
}

// ahead is the number of runs queued before w, -1 once it has its slot.
func (s *Slots) ahead(w *slotWait) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.waiting {
		if q == w {
			return i
		}
	}
	return -1
}

// drop takes w out of the queue; it reports true when w had been given
// a slot already.
func (s *Slots) drop(w *slotWait) bool {
	for i, q := range s.waiting {
		if q == w {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			return false
		}
	}
	return true
}

func (s *Slots) releaser(r *SlotRun) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for i, q := range s.running {
				if q == r {
					s.running = append(s.running[:i], s.running[i+1:]...)
					break
				}
			}
			for len(s.running) < s.size && len(s.waiting) > 0 {
				w := s.waiting[0]
				s.waiting = s.waiting[1:]
				w.run.Started = s.now()
				s.running = append(s.running, w.run)
				close(w.ready)
			}
			s.change()
		})
	}
}

// Note sets what a running run is doing and what it has cost.
func (s *Slots) Note(r *SlotRun, step string, costUSD float64) {
	if s == nil || r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Step, r.CostUSD = step, costUSD
}

// NoteAccount sets the account a run uses.
func (s *Slots) NoteAccount(r *SlotRun, account string) {
	if s == nil || r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Account = account
}

// SlotsView is what the worker's slots hold at one moment.
type SlotsView struct {
	Slots   int       `json:"slots"`
	Running []SlotRun `json:"running"`
	Queue   []SlotRun `json:"queue"`
}

// View copies the slots' state, the queue in the order it is served.
func (s *Slots) View() SlotsView {
	if s == nil {
		return SlotsView{Running: []SlotRun{}, Queue: []SlotRun{}}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := SlotsView{Slots: s.size, Running: make([]SlotRun, 0, len(s.running)), Queue: make([]SlotRun, 0, len(s.waiting))}
	for _, r := range s.running {
		v.Running = append(v.Running, *r)
	}
	for _, w := range s.waiting {
		v.Queue = append(v.Queue, *w.run)
	}
	return v
}

// takeSlot waits for one of the worker's slots for a run of a's runner
// on in, heartbeating the activity meanwhile and telling the task, at
// most every slotNoteEvery, how many runs are ahead of it.
func (d *Delivery) takeSlot(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput) (*SlotRun, func(), error) {
	m := in.Message
	run := SlotRun{TaskID: m.TaskID, Role: m.To, Runner: a.Runner, Priority: in.Priority}
	var told time.Time
	lastAhead := -1
	return d.Slots.Take(ctx, run, func(ahead int) {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, "waiting for a runner slot")
		}
		now := time.Now()
		if d.Heartbeats == nil || (ahead == lastAhead && now.Sub(told) < slotNoteEvery) {
			return
		}
		told, lastAhead = now, ahead
		note := fmt.Sprintf("waiting for a runner slot on %s (%d in use, %d runs ahead; runner.slots)", d.host(), d.Slots.Size(), ahead)
		if err := d.Heartbeats.Heartbeat(ctx, m.TaskID, task.HeartbeatInput{From: m.To, Note: note}); err != nil {
			d.log().Debug("runner slot heartbeat", "task_id", m.TaskID, "error", err)
		}
	})
}

// slotNoteEvery spaces the task's notes of a run waiting for a slot
// whose place in the queue has not moved.
const slotNoteEvery = time.Minute

func (d *Delivery) host() string {
	if d.Host != "" {
		return d.Host
	}
	return "this worker"
}

// noteSlot tells the fleet view what the run does and has cost.
func (st *runState) noteSlot(ev runner.Event) {
	if st.slot == nil || st.d.Slots == nil {
		return
	}
	step := string(ev.Kind)
	switch ev.Kind {
	case runner.EventToolCall:
		step = "tool " + ev.Tool
	case runner.EventToolResult:
		step = "thinking"
	case runner.EventUsage:
		u := ev.Usage
		if u.CostReported {
			st.cost += u.CostUSD
		} else {
			st.cost += st.d.Pricing.Price(st.a.Model, u.InputTokens, u.OutputTokens)
		}
		step = st.slot.Step
	}
	st.d.Slots.Note(st.slot, step, st.cost)
}
