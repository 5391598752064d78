package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// Decider is what a bot needs of the task workflows.
type Decider interface {
	Decide(ctx context.Context, taskID string, in decision.Answer) (task.DecideResult, error)
	Pending(ctx context.Context) ([]decision.Decision, error)
}

// Post says how a decision is posted: when first raised (the zero
// value), again as a reminder, or again because it escalated, calling
// the escalation group.
type Post struct {
	// Reminder: nobody has answered within remind_after.
	Reminder bool
	// Escalated: nobody has answered within escalate_after; Mention are
	// the platform user ids of the escalation group, called by name.
	Escalated bool
	Mention   []string
}

// Poster is a platform's side of posting: its API calls and its renderer.
type Poster[R any] interface {
	// PostDecision posts d with one button per option, tokens[i] being
	// the value of d.Options[i], and returns where it went. The message
	// shows the quorum's progress when d needs more than one approval.
	PostDecision(ctx context.Context, d decision.Decision, tokens []string, how Post) (R, error)
	// EditOpen edits one posted copy of d to d as it stands now (the
	// approvals given so far), keeping its buttons and how it was posted.
	EditOpen(ctx context.Context, ref R, d decision.Decision, tokens []string, how Post) error
	// EditClosed edits one posted copy of d to its outcome, without buttons.
	EditClosed(ctx context.Context, ref R, d decision.Decision, o decision.Outcome) error
	// PostEscalation posts an escalation that asks nothing of the admins.
	PostEscalation(ctx context.Context, m amp.Message) error
	// PostStatus posts a status notice.
	PostStatus(ctx context.Context, in activities.NotifyInput) error
}

// Core is the logic a bot shares with the other platforms: it posts and
// closes decisions once each, whatever is retried, and turns an admin's
// choice into a decision. Its fields are set once, before use.
type Core[R Ref[R], D Data[R]] struct {
	// Channel is the channel recorded with decisions ("slack"); it is also
	// the config section that lists the admins.
	Channel string
	// Platform names the platform to users ("Slack").
	Platform string
	// By turns a platform user id into the identity a decision records.
	By     func(user string) string
	Admins map[string]bool
	// Escalation are the user ids of the channel's escalation group
	// (admins_escalation): called when a decision escalates, and allowed
	// to decide it from then on.
	Escalation []string
	Store      *Store[R, D]
	Poster     Poster[R]
	Decider    Decider
	Log        *slog.Logger
	Now        func() time.Time
	// DecideTimeout bounds one Decide call.
	DecideTimeout time.Duration

	// mu serialises posting and editing, so a retried Notify and the
	// re-post on start cannot post one decision twice.
	mu sync.Mutex
}

// AdminSet makes the admin set of a configured list of user ids.
func AdminSet(ids []string) map[string]bool {
	set := map[string]bool{}
	for _, a := range ids {
		set[strings.TrimSpace(a)] = true
	}
	return set
}

// IsAdmin reports whether a user may decide. Only the user id the platform
// vouches for counts, never what a button carries.
func (c *Core[R, D]) IsAdmin(user string) bool { return user != "" && c.Admins[user] }

// MayDecide reports whether user may press the button token: an admin
// always; a member of the escalation group once the button's decision
// has escalated. Only the user id the platform vouches for counts.
func (c *Core[R, D]) MayDecide(user, token string) bool {
	if c.IsAdmin(user) {
		return true
	}
	if user == "" || !slices.Contains(c.Escalation, user) {
		return false
	}
	_, p, ok := c.Store.Lookup(token)
	return ok && !p.Decision.EscalatedAt.IsZero()
}

// NotAdminText tells user how to become an admin.
func (c *Core[R, D]) NotAdminText(user string) string {
	return NotAdminText(c.Platform, c.Channel, user)
}

// Notify implements activities.Notifier. It is safe to retry: what was
// posted already is not posted again, and a closed decision is edited once.
func (c *Core[R, D]) Notify(ctx context.Context, in activities.NotifyInput) error {
	switch in.Event {
	case activities.NoticeDecisionOpened:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		return c.PostDecision(ctx, *in.Decision)
	case activities.NoticeDecisionClosed:
		if in.Decision == nil || in.Outcome == nil {
			return fmt.Errorf("notice %s of task %s has no decision or outcome", in.Event, in.TaskID)
		}
		return c.CloseDecision(ctx, *in.Decision, *in.Outcome)
	case activities.NoticeDecisionProgress:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		return c.ShowProgress(ctx, *in.Decision)
	case activities.NoticeDecisionReminder:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		d := *in.Decision
		return c.PostAgain(ctx, d, Post{Reminder: true}, fmt.Sprintf("reminder:%s:%d", d.ID, d.RemindedAt.UnixMilli()))
	case activities.NoticeDecisionEscalated:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		d := *in.Decision
		return c.PostAgain(ctx, d, Post{Escalated: true, Mention: c.Escalation}, "escalated:"+d.ID)
	case activities.NoticeEscalation:
		if in.Message == nil {
			return fmt.Errorf("notice %s of task %s has no message", in.Event, in.TaskID)
		}
		m := *in.Message
		return c.postOnce("escalation:"+m.MsgID, func() error { return c.Poster.PostEscalation(ctx, m) })
	case activities.NoticeStatus:
		return c.postOnce(NoticeKey(ctx, in), func() error { return c.Poster.PostStatus(ctx, in) })
	}
	c.Log.Warn("notice ignored: unknown event", "event", in.Event, "task", in.TaskID)
	return nil
}

// NoticeKey names a status notice across retries: the activity that
// carries it when there is one, else what it says.
func NoticeKey(ctx context.Context, in activities.NotifyInput) string {
	if activity.IsActivity(ctx) {
		i := activity.GetInfo(ctx)
		return fmt.Sprintf("status:%s:%s:%s", i.WorkflowExecution.ID, i.WorkflowExecution.RunID, i.ActivityID)
	}
	return fmt.Sprintf("status:%s:%s:%s", in.TaskID, in.Status, in.Text)
}

// postOnce runs post, a message without buttons, unless key was posted before.
func (c *Core[R, D]) postOnce(key string, post func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var done bool
	c.Store.View(func(s D) { _, done = s.Base().Notices[key] })
	if done {
		return nil
	}
	if err := post(); err != nil {
		return fmt.Errorf("posting notice %s: %w", key, err)
	}
	return c.Store.Update(c.Now(), func(s D) { s.Base().Notices[key] = c.Now() })
}

// PostDecision posts d with its buttons unless it was posted before.
func (c *Core[R, D]) PostDecision(ctx context.Context, d decision.Decision) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var done bool
	c.Store.View(func(s D) { p := s.Base().Decisions[d.ID]; done = p != nil && len(p.Messages) > 0 })
	if done {
		return nil
	}
	return c.post(ctx, d, Post{}, "")
}

// PostAgain posts d once more, with working buttons, as a new message
// under key: a reminder or an escalation. A decision closed here already
// is not posted again, nor is one whose key was posted.
func (c *Core[R, D]) PostAgain(ctx context.Context, d decision.Decision, how Post, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var done bool
	c.Store.View(func(s D) {
		st := s.Base()
		_, done = st.Notices[key]
		if p := st.Decisions[d.ID]; p != nil && p.Outcome != nil {
			done = true
		}
	})
	if done {
		return nil
	}
	return c.post(ctx, d, how, key)
}

// post posts d as a new message and records it, with its buttons and,
// when key is set, under key. The caller holds c.mu.
func (c *Core[R, D]) post(ctx context.Context, d decision.Decision, how Post, key string) error {
	var (
		tokens []string
		fresh  map[string]Button
	)
	c.Store.View(func(s D) { tokens, fresh = s.Base().tokens(d) })
	ref, err := c.Poster.PostDecision(ctx, d, tokens, how)
	if err != nil {
		return fmt.Errorf("posting decision %s: %w", d.ID, err)
	}
	return c.Store.Update(c.Now(), func(s D) {
		st := s.Base()
		p := st.Decisions[d.ID]
		if p == nil { // pruned meanwhile
			p = &Posted[R]{PostedAt: c.Now()}
			st.Decisions[d.ID] = p
		}
		p.Decision = d
		p.Messages = append(p.Messages, ref)
		if how.Reminder || how.Escalated {
			if p.Again == nil {
				p.Again = map[string]Post{}
			}
			p.Again[ref.String()] = how
		}
		maps.Copy(st.Buttons, fresh)
		if key != "" {
			st.Notices[key] = c.Now()
		}
	})
}

// ShowProgress edits every open copy of d to d as it stands, its
// approvals so far, keeping the buttons; a decision not posted here yet
// is posted.
func (c *Core[R, D]) ShowProgress(ctx context.Context, d decision.Decision) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var (
		refs   []R
		again  map[string]Post
		closed bool
		tokens []string
	)
	err := c.Store.Update(c.Now(), func(s D) {
		st := s.Base()
		p := st.Decisions[d.ID]
		if p == nil {
			return
		}
		refs, again, closed = append(refs, p.Messages...), maps.Clone(p.Again), p.Outcome != nil
		if !closed {
			p.Decision = d
			var fresh map[string]Button
			tokens, fresh = st.tokens(d)
			maps.Copy(st.Buttons, fresh)
		}
	})
	switch {
	case err != nil:
		return err
	case closed:
		return nil
	case len(refs) == 0:
		return c.post(ctx, d, Post{}, "")
	}
	var errs []error
	for _, ref := range refs {
		if ref.IsClosed() {
			continue
		}
		if err := c.Poster.EditOpen(ctx, ref, d, tokens, again[ref.String()]); err != nil {
			errs = append(errs, fmt.Errorf("editing decision %s message %s: %w", d.ID, ref, err))
		}
	}
	return errors.Join(errs...)
}

// CloseDecision edits every posted copy of a decision to its outcome and
// removes the buttons. Copies edited before are left alone.
func (c *Core[R, D]) CloseDecision(ctx context.Context, d decision.Decision, o decision.Outcome) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var refs []R
	c.Store.View(func(s D) {
		if p := s.Base().Decisions[d.ID]; p != nil {
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
		if ref.IsClosed() {
			continue
		}
		if err := c.Poster.EditClosed(ctx, ref, d, o); err != nil {
			errs = append(errs, fmt.Errorf("editing decision %s message %s: %w", d.ID, ref, err))
			continue
		}
		refs[i] = ref.AsClosed()
	}
	if err := c.Store.Update(c.Now(), func(s D) {
		if p := s.Base().Decisions[d.ID]; p != nil {
			p.Messages = refs
			out := o
			p.Outcome = &out
			p.ClosedAt = c.Now()
		}
	}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Repost posts the pending decisions that have no message here: a notice
// lost in a crash, or decisions raised while the bot was away.
func (c *Core[R, D]) Repost(ctx context.Context) error {
	pending, err := c.Decider.Pending(ctx)
	if err != nil {
		return fmt.Errorf("listing pending decisions: %w", err)
	}
	var errs []error
	for _, d := range pending {
		if err := c.PostDecision(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
