package slack

import (
	"context"
	"errors"
	"fmt"

	slackapi "github.com/slack-go/slack"
	"go.temporal.io/sdk/activity"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/integrations/chat"
	"github.com/ampflow/ampflow/workflows/task"
)

// Notify implements activities.Notifier. It is safe to retry: what was
// posted already is not posted again, and a closed decision is edited once.
func (b *Bot) Notify(ctx context.Context, in activities.NotifyInput) error {
	switch in.Event {
	case activities.NoticeDecisionOpened:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		return b.postDecision(ctx, *in.Decision)
	case activities.NoticeDecisionClosed:
		if in.Decision == nil || in.Outcome == nil {
			return fmt.Errorf("notice %s of task %s has no decision or outcome", in.Event, in.TaskID)
		}
		return b.closeDecision(ctx, *in.Decision, *in.Outcome)
	case activities.NoticeEscalation:
		if in.Message == nil {
			return fmt.Errorf("notice %s of task %s has no message", in.Event, in.TaskID)
		}
		m := *in.Message
		return b.postOnce(ctx, "escalation:"+m.MsgID,
			slackapi.MsgOptionBlocks(RenderEscalation(m)...), slackapi.MsgOptionText(EscalationText(m), false))
	case activities.NoticeStatus:
		return b.postOnce(ctx, noticeKey(ctx, in), slackapi.MsgOptionText(RenderStatus(in), false))
	}
	b.log.Warn("notice ignored: unknown event", "event", in.Event, "task", in.TaskID)
	return nil
}

// noticeKey names a status notice across retries: the activity that
// carries it when there is one, else what it says.
func noticeKey(ctx context.Context, in activities.NotifyInput) string {
	if activity.IsActivity(ctx) {
		i := activity.GetInfo(ctx)
		return fmt.Sprintf("status:%s:%s:%s", i.WorkflowExecution.ID, i.WorkflowExecution.RunID, i.ActivityID)
	}
	return fmt.Sprintf("status:%s:%s:%s", in.TaskID, in.Status, in.Text)
}

// postOnce posts a message without buttons unless key was posted before.
func (b *Bot) postOnce(ctx context.Context, key string, opts ...slackapi.MsgOption) error {
	b.postMu.Lock()
	defer b.postMu.Unlock()
	var done bool
	b.store.View(func(s *stateData) { _, done = s.Notices[key] })
	if done {
		return nil
	}
	err := b.call(ctx, "chat.postMessage", func() error {
		_, _, err := b.api.PostMessageContext(ctx, b.cfg.Channel, append(opts, slackapi.MsgOptionDisableLinkUnfurl())...)
		return err
	})
	if err != nil {
		return fmt.Errorf("posting notice %s: %w", key, err)
	}
	return b.store.Update(b.now(), func(s *stateData) { s.Notices[key] = b.now() })
}

// postDecision posts d with its buttons unless it was posted before.
func (b *Bot) postDecision(ctx context.Context, d task.Decision) error {
	b.postMu.Lock()
	defer b.postMu.Unlock()
	var done bool
	b.store.View(func(s *stateData) { done = s.Decisions[d.ID] != nil && len(s.Decisions[d.ID].Messages) > 0 })
	if done {
		return nil
	}
	tokens := make([]string, len(d.Options))
	for i := range tokens {
		tokens[i] = chat.NewToken()
	}
	var channel, ts string
	err := b.call(ctx, "chat.postMessage", func() (err error) {
		channel, ts, err = b.api.PostMessageContext(ctx, b.cfg.Channel,
			slackapi.MsgOptionBlocks(RenderDecision(d, tokens)...),
			slackapi.MsgOptionText(DecisionText(d), false),
			slackapi.MsgOptionDisableLinkUnfurl())
		return err
	})
	if err != nil {
		return fmt.Errorf("posting decision %s: %w", d.ID, err)
	}
	b.log.Info("decision posted", "decision", d.ID, "task", d.TaskID, "channel", channel, "ts", ts)
	return b.store.Update(b.now(), func(s *stateData) {
		s.Decisions[d.ID] = &posted{Decision: d, Messages: []msgRef{{Channel: channel, TS: ts}}, PostedAt: b.now()}
		for i, o := range d.Options {
			s.Buttons[tokens[i]] = button{DecisionID: d.ID, Option: o.ID}
		}
	})
}

// closeDecision edits every posted copy of a decision to its outcome and
// drops the buttons. Copies edited before are left alone.
func (b *Bot) closeDecision(ctx context.Context, d task.Decision, o task.Outcome) error {
	b.postMu.Lock()
	defer b.postMu.Unlock()
	var refs []msgRef
	b.store.View(func(s *stateData) {
		if p := s.Decisions[d.ID]; p != nil {
			refs = append(refs, p.Messages...)
			if len(p.Decision.Options) > 0 {
				d = p.Decision
			}
		}
	})
	if len(refs) == 0 {
		return nil
	}
	var errs []error
	for i, ref := range refs {
		if ref.Closed {
			continue
		}
		err := b.call(ctx, "chat.update", func() error {
			_, _, _, err := b.api.UpdateMessageContext(ctx, ref.Channel, ref.TS,
				slackapi.MsgOptionBlocks(RenderClosed(d, o)...),
				slackapi.MsgOptionText(ClosedText(d, o), false))
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("editing decision %s message %s: %w", d.ID, ref.TS, err))
			continue
		}
		refs[i].Closed = true
	}
	if err := b.store.Update(b.now(), func(s *stateData) {
		if p := s.Decisions[d.ID]; p != nil {
			p.Messages = refs
			out := o
			p.Outcome = &out
			p.ClosedAt = b.now()
		}
	}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// repost posts the pending decisions that have no message here: a notice
// lost in a crash, or decisions raised while the bot was away.
func (b *Bot) repost(ctx context.Context) error {
	pending, err := b.dec.Pending(ctx)
	if err != nil {
		return fmt.Errorf("listing pending decisions: %w", err)
	}
	var errs []error
	for _, d := range pending {
		if err := b.postDecision(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
