package goal

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	goalacts "github.com/ampflow/ampflow/activities/goal"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// drain runs the queued effects in order: records, the open decisions'
// saves, notices. One that fails after its retries is logged; the goal
// goes on.
func (r *run) drain(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return len(r.queue) > 0 }); err != nil {
			return
		}
		e := r.queue[0]
		switch {
		case e.record != nil:
			lctx := workflow.WithLocalActivityOptions(ctx, storeOptions())
			if err := workflow.ExecuteLocalActivity(lctx, gacts.GoalRecord, goalacts.RecordInput{
				Subject: r.id, Entries: []activities.RecordEntry{*e.record},
			}).Get(ctx, nil); err != nil {
				r.log.Error("recording", "id", e.record.ID, "err", err)
			}
		case e.pending:
			r.rev++
			in := goalacts.DecisionsInput{Subject: r.id, Rev: r.rev, Decisions: []ssot.PendingDecision{}}
			if d := r.engine.Pending(); d != nil {
				b, _ := json.Marshal(d)
				in.Decisions = append(in.Decisions, ssot.PendingDecision{ID: d.ID, Subject: r.id, Kind: string(d.Kind),
					RaisedAt: d.RaisedAt, ExpiresAt: d.ExpiresAt, Body: b})
			}
			lctx := workflow.WithLocalActivityOptions(ctx, storeOptions())
			if err := workflow.ExecuteLocalActivity(lctx, gacts.GoalDecisions, in).Get(ctx, nil); err != nil {
				r.log.Error("saving the open decisions", "err", err)
			}
		case e.tell != nil:
			tctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				StartToCloseTimeout: 30 * time.Second,
				RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 5},
			})
			if err := workflow.ExecuteActivity(tctx, gacts.GoalTellTask, *e.tell).Get(ctx, nil); err != nil {
				r.log.Warn("telling a task of an overlap", "task", e.tell.TaskID, "err", err)
			}
		case e.notice != nil:
			nctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				StartToCloseTimeout: 30 * time.Second,
				RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 10},
			})
			if err := workflow.ExecuteActivity(nctx, acts.Notify, *e.notice).Get(ctx, nil); err != nil {
				r.log.Error("notifying", "event", e.notice.Event, "err", err)
			}
		}
		r.queue = r.queue[1:]
	}
}

// storeOptions run the SSOT writes as local activities, retried until
// the store answers.
func storeOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 30 * time.Second},
	}
}

// watchOverlaps compares, every OverlapEvery while the goal runs, the
// files the branches of its running tasks change against the target; an
// overlap is kept in both tasks' states and told to the admins once.
func (r *run) watchOverlaps(ctx workflow.Context) {
	every := r.in.OverlapEvery
	if every <= 0 {
		every = DefaultOverlapEvery
	}
	for !r.Status.Terminal() {
		if err := workflow.Sleep(ctx, every); err != nil {
			return
		}
		var running []int
		for i, t := range r.Tasks {
			if t.Status == goal.TaskRunning {
				running = append(running, i)
			}
		}
		if len(running) < 2 {
			continue
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 2},
		})
		// One call per repository, for all its running branches.
		var repos []string
		byRepo := map[string][]string{}
		for _, i := range running {
			t := r.Tasks[i]
			if byRepo[t.Repo] == nil {
				repos = append(repos, t.Repo)
			}
			byRepo[t.Repo] = append(byRepo[t.Repo], t.Branch)
		}
		changed := map[string]map[string][]string{}
		for _, repo := range repos {
			var out goalacts.ChangedFilesResult
			if err := workflow.ExecuteActivity(actx, gacts.ChangedFiles, goalacts.ChangedFilesInput{Repo: repo, Target: r.Target, Branches: byRepo[repo]}).Get(ctx, &out); err != nil {
				r.log.Warn("listing the branches' files", "repo", repo, "err", err)
				continue
			}
			changed[repo] = out.Files
		}
		files := map[int][]string{}
		for _, i := range running {
			files[i] = changed[r.Tasks[i].Repo][r.Tasks[i].Branch]
		}
		for _, i := range running {
			r.Tasks[i].Overlaps = nil
		}
		for a, i := range running {
			for _, j := range running[a+1:] {
				if r.Tasks[i].Repo != r.Tasks[j].Repo {
					continue
				}
				both := intersect(files[i], files[j])
				if len(both) == 0 {
					continue
				}
				ti, tj := &r.Tasks[i], &r.Tasks[j]
				ti.Overlaps = append(ti.Overlaps, goal.Overlap{With: tj.Key, Files: both})
				tj.Overlaps = append(tj.Overlaps, goal.Overlap{With: ti.Key, Files: both})
				pair := ti.Key + "|" + tj.Key + "|" + strings.Join(both, ",")
				if slices.Contains(r.told, pair) {
					continue
				}
				r.told = append(r.told, pair)
				r.tellOverlap(ctx, *ti, *tj, both)
			}
		}
	}
}

// tellOverlap records an overlap in the goal's chain, tells the admins,
// and tells both tasks' agents (a message in each task's timeline).
func (r *run) tellOverlap(ctx workflow.Context, a, b goal.TaskState, files []string) {
	text := fmt.Sprintf("goal %s: tasks %s (%s) and %s (%s) both change %s", r.Goal.ID, a.Key, a.TaskID, b.Key, b.TaskID, strings.Join(files, ", "))
	body, _ := json.Marshal(map[string]any{"event": "overlap", "tasks": []string{a.Key, b.Key}, "task_ids": []string{a.TaskID, b.TaskID}, "files": files})
	now := workflow.Now(ctx)
	r.queue = append(r.queue,
		effect{record: &activities.RecordEntry{ID: fmt.Sprintf("%s-overlap-%s-%s-%d", r.id, a.Key, b.Key, now.UnixNano()), Kind: kindGoal, Body: body, RecordedAt: now}},
		effect{notice: &notify.Input{TaskID: r.id, Event: notify.Escalation, Status: task.Status(r.Status), Text: text}})
	from := "goal " + r.Goal.ID
	for _, p := range [][2]goal.TaskState{{a, b}, {b, a}} {
		msg := fmt.Sprintf("%s: task %s (%s, branch %s) changes %s too, as your branch does. Keep your changes to these files small and to the point; they will meet at the merge.",
			from, p[1].Key, p[1].TaskID, p[1].Branch, strings.Join(files, ", "))
		r.queue = append(r.queue, effect{tell: &goalacts.TellTaskInput{TaskID: p[0].TaskID, From: from, Text: msg}})
	}
}

// intersect is the files in both sorted lists.
func intersect(a, b []string) []string {
	var out []string
	for _, f := range a {
		if _, ok := slices.BinarySearch(b, f); ok {
			out = append(out, f)
		}
	}
	return out
}

// host is the goal's side of the decision engine.
type host struct{ r *run }

var noticeOf = map[decide.Event]notify.Event{
	decide.EventOpened:    notify.DecisionOpened,
	decide.EventProgress:  notify.DecisionProgress,
	decide.EventReminded:  notify.DecisionReminder,
	decide.EventEscalated: notify.DecisionEscalated,
	decide.EventClosed:    notify.DecisionClosed,
}

func (h host) Record(ctx workflow.Context, id string, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		h.r.log.Error("encoding a record", "id", id, "err", err)
		return
	}
	h.r.queue = append(h.r.queue, effect{record: &activities.RecordEntry{ID: id, Kind: ssot.KindDecision, Body: b, RecordedAt: workflow.Now(ctx)}})
}

func (h host) Notify(ctx workflow.Context, ev decide.Event, d decision.Decision, o *decision.Outcome) {
	r := h.r
	r.queue = append(r.queue, effect{pending: true})
	n := notify.Input{TaskID: r.id, Event: noticeOf[ev], Status: task.Status(r.Status), Decision: &d, Outcome: o}
	r.queue = append(r.queue, effect{notice: &n})
}

func (h host) MayDecide(by string, escalated bool) bool {
	return h.r.policy.MayDecide(by, escalated)
}
