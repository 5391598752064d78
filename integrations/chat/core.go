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

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
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
	PostStatus(ctx context.Context, in notify.Input) error
}

// Core is the logic a bot shares with the other platforms: it posts and
// closes decisions once each, whatever is retried, and turns an admin's
// choice into a decision. Its fields are set once, before use.
type Core[R Ref[R]] struct {
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
	Poster     Poster[R]
	Decider    Decider
	Log        *slog.Logger
	Now        func() time.Time
	// DecideTimeout bounds one Decide call.
	DecideTimeout time.Duration
	// State is where the bot keeps what it posted: the SSOT every worker
	// shares (NewSQLState), so any worker answers any click and nothing is
	// posted twice.
	State Posts[R]

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
func (c *Core[R]) IsAdmin(user string) bool { return user != "" && c.Admins[user] }

// MayDecide reports whether user may press the button token: an admin
// always; a member of the escalation group once the button's decision
// has escalated. Only the user id the platform vouches for counts.
func (c *Core[R]) MayDecide(user, token string) bool {
	if c.IsAdmin(user) {
		return true
	}
	if user == "" || !slices.Contains(c.Escalation, user) {
		return false
	}
	_, p, ok, err := c.lookup(token)
	return err == nil && ok && !p.Decision.EscalatedAt.IsZero()
}

// NotAdminText tells user how to become an admin.
func (c *Core[R]) NotAdminText(user string) string {
	return NotAdminText(c.Platform, c.Channel, user)
}

// Notify implements notify.Notifier. It is safe to retry: what was
// posted already is not posted again, and a closed decision is edited once.
func (c *Core[R]) Notify(ctx context.Context, in notify.Input) error {
	switch in.Event {
	case notify.DecisionOpened:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		return c.PostDecision(ctx, *in.Decision)
	case notify.DecisionClosed:
		if in.Decision == nil || in.Outcome == nil {
			return fmt.Errorf("notice %s of task %s has no decision or outcome", in.Event, in.TaskID)
		}
		return c.CloseDecision(ctx, *in.Decision, *in.Outcome)
	case notify.DecisionProgress:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		return c.ShowProgress(ctx, *in.Decision)
	case notify.DecisionReminder:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		d := *in.Decision
		return c.PostAgain(ctx, d, Post{Reminder: true}, fmt.Sprintf("reminder:%s:%d", d.ID, d.RemindedAt.UnixMilli()))
	case notify.DecisionEscalated:
		if in.Decision == nil {
			return fmt.Errorf("notice %s of task %s has no decision", in.Event, in.TaskID)
		}
		d := *in.Decision
		return c.PostAgain(ctx, d, Post{Escalated: true, Mention: c.Escalation}, "escalated:"+d.ID)
	case notify.Escalation:
		if in.Message == nil {
			return fmt.Errorf("notice %s of task %s has no message", in.Event, in.TaskID)
		}
		m := *in.Message
		return c.postOnce(ctx, "escalation:"+m.MsgID, func() error { return c.Poster.PostEscalation(ctx, m) })
	case notify.Status:
		return c.postOnce(ctx, NoticeKey(ctx, in), func() error { return c.Poster.PostStatus(ctx, in) })
	}
	c.Log.Warn("notice ignored: unknown event", "event", in.Event, "task", in.TaskID)
	return nil
}

// NoticeKey names a status notice across retries: the activity that
// carries it when there is one, else what it says.
func NoticeKey(ctx context.Context, in notify.Input) string {
	if activity.IsActivity(ctx) {
		i := activity.GetInfo(ctx)
		return fmt.Sprintf("status:%s:%s:%s", i.WorkflowExecution.ID, i.WorkflowExecution.RunID, i.ActivityID)
	}
	return fmt.Sprintf("status:%s:%s:%s", in.TaskID, in.Status, in.Text)
}

// postOnce runs post, a message without buttons, unless key was posted
// before, here or at another worker.
func (c *Core[R]) postOnce(ctx context.Context, key string, post func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if done, err := c.claim(ctx, key); done || err != nil {
		return err
	}
	if err := post(); err != nil {
		return c.unclaim(ctx, key, fmt.Errorf("posting notice %s: %w", key, err))
	}
	return c.State.PostedNotice(ctx, key, c.Now())
}

// claim claims key for posting; done is true when it was posted before.
func (c *Core[R]) claim(ctx context.Context, key string) (done bool, err error) {
	cl, err := c.State.ClaimNotice(ctx, key, c.Now())
	switch {
	case err != nil:
		return false, fmt.Errorf("claiming notice %s: %w", key, err)
	case cl == ssot.ClaimPosted:
		return true, nil
	case cl == ssot.ClaimBusy:
		return false, fmt.Errorf("notice %s: %w", key, ErrNoticeBusy)
	}
	return false, nil
}

// unclaim gives key back after its post failed with err, so a retry posts.
func (c *Core[R]) unclaim(ctx context.Context, key string, err error) error {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateTimeout)
	defer cancel()
	if uerr := c.State.UnclaimNotice(uctx, key); uerr != nil {
		return errors.Join(err, fmt.Errorf("unclaiming notice %s: %w", key, uerr))
	}
	return err
}

// PostDecision posts d with its buttons unless it was posted before, here
// or at another worker.
func (c *Core[R]) PostDecision(ctx context.Context, d decision.Decision) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.postFirst(ctx, d)
}

// postFirst posts d unless a copy of it was posted. The caller holds c.mu.
func (c *Core[R]) postFirst(ctx context.Context, d decision.Decision) error {
	p, ok, err := c.State.Posted(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("reading decision %s: %w", d.ID, err)
	}
	if ok && len(p.Messages) > 0 {
		return nil
	}
	return c.post(ctx, d, Post{}, "decision:"+d.ID)
}

// PostAgain posts d once more, with working buttons, as a new message
// under key: a reminder or an escalation. A decision closed here already
// is not posted again, nor is one whose key was posted, here or at
// another worker.
func (c *Core[R]) PostAgain(ctx context.Context, d decision.Decision, how Post, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok, err := c.State.Posted(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("reading decision %s: %w", d.ID, err)
	}
	if ok && p.Outcome != nil {
		return nil
	}
	return c.post(ctx, d, how, key)
}

// post claims key, posts d as a new message and records it with its
// buttons, then key as posted. The caller holds c.mu.
func (c *Core[R]) post(ctx context.Context, d decision.Decision, how Post, key string) error {
	if done, err := c.claim(ctx, key); done || err != nil {
		return err
	}
	st := c.State
	buttons, err := st.Buttons(ctx, d.ID)
	if err != nil {
		return c.unclaim(ctx, key, fmt.Errorf("reading the buttons of decision %s: %w", d.ID, err))
	}
	tokens, fresh := tokensFor(d, buttons)
	ref, err := c.Poster.PostDecision(ctx, d, tokens, how)
	if err != nil {
		return c.unclaim(ctx, key, fmt.Errorf("posting decision %s: %w", d.ID, err))
	}
	// Posted but not recorded, the claim stays: a retry within ClaimStale
	// is told another worker is posting it, rather than posting it twice.
	err = st.SavePosted(ctx, d.ID, c.Now(), fresh, func(p *Posted[R], found bool) bool {
		if !found { // never posted, or pruned meanwhile
			p.PostedAt = c.Now()
		}
		p.Decision = d
		p.Messages = append(p.Messages, ref)
		if how.Reminder || how.Escalated {
			if p.Again == nil {
				p.Again = map[string]Post{}
			}
			p.Again[ref.String()] = how
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("recording decision %s as posted: %w", d.ID, err)
	}
	return st.PostedNotice(ctx, key, c.Now())
}

// ShowProgress edits every open copy of d to d as it stands, its
// approvals so far, keeping the buttons; a decision not posted here yet
// is posted.
func (c *Core[R]) ShowProgress(ctx context.Context, d decision.Decision) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.State
	buttons, err := st.Buttons(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("reading the buttons of decision %s: %w", d.ID, err)
	}
	tokens, fresh := tokensFor(d, buttons)
	var (
		refs          []R
		again         map[string]Post
		found, closed bool
	)
	err = st.SavePosted(ctx, d.ID, c.Now(), fresh, func(p *Posted[R], ok bool) bool {
		found = ok
		if !ok {
			return false
		}
		refs, again, closed = slices.Clone(p.Messages), maps.Clone(p.Again), p.Outcome != nil
		if closed {
			return false
		}
		p.Decision = d
		return true
	})
	switch {
	case err != nil:
		return fmt.Errorf("recording the progress of decision %s: %w", d.ID, err)
	case closed:
		return nil
	case !found || len(refs) == 0:
		return c.postFirst(ctx, d)
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
func (c *Core[R]) CloseDecision(ctx context.Context, d decision.Decision, o decision.Outcome) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.State
	p, ok, err := st.Posted(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("reading decision %s: %w", d.ID, err)
	}
	if !ok || len(p.Messages) == 0 {
		return nil
	}
	refs := p.Messages
	if len(p.Decision.Options) > 0 {
		d = p.Decision
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
	if err := st.SaveClosed(ctx, d.ID, refs, o, c.Now()); err != nil {
		errs = append(errs, fmt.Errorf("recording decision %s as closed: %w", d.ID, err))
	}
	return errors.Join(errs...)
}

// Repost posts the pending decisions that have no message here: a notice
// lost in a crash, or decisions raised while the bot was away.
func (c *Core[R]) Repost(ctx context.Context) error {
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
