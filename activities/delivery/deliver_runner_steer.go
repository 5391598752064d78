package delivery

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
)

// Steering is where a runner's delivery finds what people send its task
// while it runs (ampflow task say, ampflow task interrupt): the store,
// which the API writes from whatever process it runs in (*ssot.DB).
type Steering interface {
	UndeliveredTaskMessages(ctx context.Context, taskID, kind string, after int64) ([]ssot.TaskMessage, error)
	LastTaskMessage(ctx context.Context, taskID, kind string) (int64, error)
	DeliverTaskMessage(ctx context.Context, id int64, run string, at time.Time) (ssot.TaskMessage, bool, error)
}

var _ Steering = (*ssot.DB)(nil)

const (
	// steerPoll is how often a running delivery looks for messages and
	// interrupts.
	steerPoll = 250 * time.Millisecond
	// maxSteerRuns bounds the runs one delivery resumes at its turn
	// boundary for messages that came while the CLI ran.
	maxSteerRuns = 20
)

// steer is what one runner delivery knows of its task's messages.
type steer struct {
	d      *Delivery
	taskID string
	// run names the delivery in a delivered message's run.
	run string
	// floor is the newest interrupt when the delivery started: only a
	// later one stops it (an older one was for an earlier run).
	floor int64

	mu sync.Mutex
	// interrupt is the interrupt that stopped the run; zero before.
	interrupt ssot.TaskMessage
}

// steering starts the steering of a delivery of m; nil without a store.
func (d *Delivery) steering(ctx context.Context, m amp.Message) *steer {
	if d.Steer == nil {
		return nil
	}
	s := &steer{d: d, taskID: m.TaskID, run: m.MsgID + "/" + string(m.To)}
	floor, err := d.Steer.LastTaskMessage(ctx, m.TaskID, ssot.TaskMessageInterrupt)
	if err != nil {
		d.log().Warn("reading the task's interrupts", "task_id", m.TaskID, "error", err)
	}
	s.floor = floor
	return s
}

// watch runs beside one CLI run until ctx ends: an interrupt stops the
// run (ReasonInterrupted on stop); with live input (msgs not nil) each
// message is given to the CLI as a user turn and marked delivered once it
// is written to its input.
func (s *steer) watch(ctx context.Context, msgs chan<- runner.Message, stop chan<- runner.Reason) {
	tick := time.NewTicker(steerPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ints, err := s.d.Steer.UndeliveredTaskMessages(ctx, s.taskID, ssot.TaskMessageInterrupt, s.floor)
		if err == nil && len(ints) > 0 {
			if m, won, err := s.d.Steer.DeliverTaskMessage(ctx, ints[0].ID, s.run, time.Now()); err == nil && won {
				s.mu.Lock()
				s.interrupt = m
				s.mu.Unlock()
				select {
				case stop <- runner.ReasonInterrupted:
				case <-ctx.Done():
				}
				return
			}
		}
		if msgs == nil {
			continue
		}
		says, err := s.d.Steer.UndeliveredTaskMessages(ctx, s.taskID, ssot.TaskMessageSay, 0)
		if err != nil {
			continue
		}
		for _, m := range says {
			taken := make(chan bool, 1)
			select {
			case msgs <- runner.Message{Text: steerText(m), Taken: taken}:
			case <-ctx.Done():
				return
			}
			if !<-taken {
				break // the run takes no more: the next turn boundary gets it
			}
			if _, _, err := s.d.Steer.DeliverTaskMessage(ctx, m.ID, s.run, time.Now()); err != nil {
				s.d.log().Warn("marking a message delivered", "task_id", s.taskID, "id", m.ID, "error", err)
			}
		}
	}
}

// interrupted is the interrupt that stopped the run, if one did.
func (s *steer) interrupted() (ssot.TaskMessage, bool) {
	if s == nil {
		return ssot.TaskMessage{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interrupt, s.interrupt.ID != 0
}

// queued takes the messages no run got yet, marking them delivered, and
// returns them as the prompt that resumes the session; "" for none.
func (s *steer) queued(ctx context.Context) string {
	if s == nil {
		return ""
	}
	says, err := s.d.Steer.UndeliveredTaskMessages(ctx, s.taskID, ssot.TaskMessageSay, 0)
	if err != nil {
		s.d.log().Warn("reading the task's messages", "task_id", s.taskID, "error", err)
		return ""
	}
	var texts []string
	for _, m := range says {
		if _, won, err := s.d.Steer.DeliverTaskMessage(ctx, m.ID, s.run, time.Now()); err == nil && won {
			texts = append(texts, steerText(m))
		}
	}
	return strings.Join(texts, "\n\n")
}

// steerText is a message as the agent reads it.
func steerText(m ssot.TaskMessage) string {
	return fmt.Sprintf("ampflow: a message from %s about this task:\n\n%s\n\n"+
		"Take it into account, carry on with the task, and end with your final report as asked.", m.Sender, m.Text)
}

// interruptedPrompt resumes an interrupted run that no message came for
// (a redispatch, or messages another run took).
func interruptedPrompt(by string) string {
	return fmt.Sprintf("ampflow: %s interrupted your run and it now resumes. Carry on with the task and end with your final report as asked.", by)
}

// interruptedError ends the delivery of a run a person interrupted.
func interruptedError(a activities.AgentDelivery, m amp.Message, in ssot.TaskMessage, session string) error {
	msg := fmt.Sprintf("the %s runner (%s) on %s was interrupted by %s: its session is kept until a message or a redispatch resumes it",
		m.To, a.Runner, m.MsgID, in.Sender)
	return temporal.NewNonRetryableApplicationError(msg, activities.ErrInterrupted, nil,
		activities.Interrupted{By: in.Sender, ID: in.ID, SessionID: session})
}
