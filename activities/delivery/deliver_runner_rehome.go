package delivery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
)

// A task re-homed to this host (DeliverInput.Rehome) has neither its
// checkout nor its CLI session here: its first run makes a fresh checkout
// of the task's branch as the repository has it, and starts a new
// session primed with a summary of the role's transcript so far.

// TranscriptReader reads a task's transcript; the SSOT is one.
type TranscriptReader interface {
	Transcript(ctx context.Context, taskID string, f ssot.TranscriptFilter) ([]ssot.TranscriptEntry, error)
}

// Bounds of a re-homed run's summary of the transcript so far.
const (
	rehomeEntries    = 60
	rehomeEntryBytes = 400
	rehomeBytes      = 12 << 10
)

// rehomed reports whether in is a re-homed run's first attempt: a retry
// on the same host keeps the checkout and the session the first attempt
// made here.
func rehomed(ctx context.Context, in activities.DeliverInput) bool {
	if in.Rehome == nil {
		return false
	}
	return !activity.IsActivity(ctx) || activity.GetInfo(ctx).Attempt <= 1
}

// leaveStaleWorktree removes the executor's checkout this host may keep
// from an earlier stay of the task: a re-homed run starts from the
// branch as the repository has it.
func (d *Delivery) leaveStaleWorktree(ctx context.Context, a activities.AgentDelivery, in activities.DeliverInput) error {
	if in.Message.To != amp.RoleExecutor {
		return nil
	}
	local, err := d.Git.Local(ctx, in.Repo, true)
	if err != nil {
		return err
	}
	return runner.RemoveWorktree(ctx, local, activities.WorktreeDir(a.WorkDir, in.Message.TaskID, in.Message.To))
}

// rehomePrompt is what a re-homed run is told before its message: where
// the task comes from, and a summary of the role's transcript so far.
func (d *Delivery) rehomePrompt(ctx context.Context, in activities.DeliverInput) string {
	m := in.Message
	var b strings.Builder
	fmt.Fprintf(&b, "This task moved to a new machine: host %s, which ran it before, is gone", in.Rehome.From)
	if !in.Rehome.SeenAt.IsZero() {
		fmt.Fprintf(&b, " (last seen %s)", in.Rehome.SeenAt.UTC().Format(time.RFC3339))
	}
	b.WriteString(". Your earlier session is not here; the checkout is the task branch as it was last pushed, so work that was not committed is lost.\n")
	if r, ok := d.Transcripts.(TranscriptReader); ok && r != nil {
		if s := transcriptSummary(ctx, r, m.TaskID, string(m.To)); s != "" {
			b.WriteString("\nWhat you did so far, from the end of your transcript:\n")
			b.WriteString(s)
		}
	}
	b.WriteString("\n---\n\n")
	return b.String()
}

// transcriptSummary is the end of the role's transcript of the task as
// short lines: what it said, the tools it called and how the runs ended.
func transcriptSummary(ctx context.Context, r TranscriptReader, taskID, role string) string {
	var all []ssot.TranscriptEntry
	var after int64
	for {
		es, err := r.Transcript(ctx, taskID, ssot.TranscriptFilter{After: after, Role: role, Limit: ssot.MaxLimit})
		if err != nil || len(es) == 0 {
			break
		}
		all = append(all, es...)
		if len(all) > 4*rehomeEntries {
			all = all[len(all)-rehomeEntries:]
		}
		after = es[len(es)-1].Seq
		if len(es) < ssot.MaxLimit {
			break
		}
	}
	var lines []string
	for _, e := range all {
		switch e.Kind {
		case ssot.TranscriptText, ssot.TranscriptToolCall, ssot.TranscriptResult, ssot.TranscriptEnd, ssot.TranscriptError, ssot.TranscriptPlan:
		default:
			continue
		}
		what := e.Kind
		if e.Tool != "" {
			what += " " + e.Tool
		}
		lines = append(lines, fmt.Sprintf("- run %d, %s: %s", e.Run, what, clip(e.Text, rehomeEntryBytes)))
	}
	if len(lines) > rehomeEntries {
		lines = lines[len(lines)-rehomeEntries:]
	}
	s := strings.Join(lines, "\n")
	for len(s) > rehomeBytes {
		_, s, _ = strings.Cut(s, "\n")
	}
	if s != "" {
		s += "\n"
	}
	return s
}

// pushBack pushes the executor's branch at commit to the repository when
// the task names it by URL: the branch travels through the repository,
// and a host that takes the task over starts from it. A push that fails
// is logged; the task's own push after the review tries again.
func (d *Delivery) pushBack(ctx context.Context, repo, branch, commit string, m amp.Message) {
	if d.Pusher == nil || !amp.RepoIsURL(repo) {
		return
	}
	_, err := d.Pusher.Push(ctx, activities.PushInput{TaskID: m.TaskID, Repo: repo, Branch: branch, Remote: repo, Commit: commit})
	if err != nil {
		d.log().Warn("pushing the executor's branch back to its repository", "task_id", m.TaskID, "branch", branch, "error", err)
	}
}
