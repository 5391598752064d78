package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// notice is one comment on an issue about its task. Key marks it in the
// comment, so that it is posted once whatever the restarts.
type notice struct {
	Key, Text string
}

// markerRE finds the notices an issue's comments carry.
var markerRE = regexp.MustCompile(`<!-- ampflow-intake: (T-[0-9]{4}-[0-9]{3,}) ([A-Za-z0-9_:.-]+) -->`)

func marker(taskID, key string) string {
	return fmt.Sprintf("<!-- ampflow-intake: %s %s -->", taskID, key)
}

// Notices are the comments a task in state st owes its issue, in the
// order they happened: started, each decision waiting for an admin, the
// pull request, the end. link is the task's dashboard page, or "".
func Notices(st task.State, link string) []notice {
	name := st.TaskID
	if link != "" {
		name = fmt.Sprintf("[%s](%s)", st.TaskID, link)
	}
	ns := []notice{{"started", fmt.Sprintf("ampflow started task %s for this issue, on branch `%s` (%s risk).", name, st.Branch, st.Risk)}}
	if d := st.Pending; d != nil {
		text := fmt.Sprintf("Task %s waits for an admin: %s", name, d.Prompt)
		if link != "" {
			text += fmt.Sprintf("\n\nDecide on the dashboard: %s", link)
		}
		ns = append(ns, notice{"decision:" + d.ID, text})
	}
	if st.PullRequest != "" {
		ns = append(ns, notice{"pull_request", fmt.Sprintf("Task %s opened a pull request: %s", name, st.PullRequest)})
	}
	if st.MergeCommit != "" {
		ns = append(ns, notice{"merged", fmt.Sprintf("The pull request of task %s merged as %s.", name, st.MergeCommit)})
	}
	if st.Status.Terminal() {
		text := fmt.Sprintf("Task %s is %s.", name, st.Status)
		if st.Reason != "" {
			text = fmt.Sprintf("Task %s is %s: %s", name, st.Status, st.Reason)
		}
		ns = append(ns, notice{"ended", text})
	}
	return ns
}

// Follow comments on each issue what its task has done since, and closes
// the issue when the task's pull request has merged (close_on_merge).
func (g *GitHub) Follow(ctx context.Context) {
	cursor := ""
	for {
		rows, next, err := g.Store.TaskList(ctx, ssot.TaskFilter{Source: Source}, ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			g.log().Warn("github intake: listing the issues' tasks", "error", err)
			return
		}
		for _, row := range rows {
			if row.Origin == nil || g.isFinished(row.TaskID) {
				continue
			}
			if err := g.follow(ctx, row.TaskID, row.Origin.ExternalID); err != nil {
				g.log().Warn("github intake: commenting on an issue", "task_id", row.TaskID, "issue", row.Origin.ExternalID, "error", err)
			}
		}
		if next == "" {
			return
		}
		cursor = next
	}
}

func (g *GitHub) follow(ctx context.Context, taskID, issue string) error {
	owner, name, number, err := parseExternalID(issue)
	if err != nil {
		return err
	}
	row, err := g.Store.Task(ctx, taskID)
	if err != nil {
		return err
	}
	var st task.State
	if err := json.Unmarshal(row.State, &st); err != nil || st.TaskID != taskID {
		return fmt.Errorf("reading the state of task %s: %v", taskID, err)
	}
	said, err := g.saidOn(ctx, owner, name, number, taskID)
	if err != nil {
		return err
	}
	link := ""
	if g.DashboardURL != "" {
		link = strings.TrimRight(g.DashboardURL, "/") + "/tasks/" + taskID
	}
	for _, n := range Notices(st, link) {
		if said[n.Key] {
			continue
		}
		if err := g.API.CommentIssue(ctx, owner, name, number, n.Text+"\n\n"+marker(taskID, n.Key)); err != nil {
			return err
		}
		g.markSaid(taskID, n.Key)
	}
	if st.MergeCommit != "" && g.Config.CloseOnMerge {
		if err := g.API.CloseIssue(ctx, owner, name, number); err != nil {
			return err
		}
	}
	if st.Status.Terminal() {
		g.mu.Lock()
		if g.finished == nil {
			g.finished = map[string]bool{}
		}
		g.finished[taskID] = true
		g.mu.Unlock()
	}
	return nil
}

// saidOn reads which notices of taskID the issue carries, from its
// comments the first time, from memory after.
func (g *GitHub) saidOn(ctx context.Context, owner, name string, number int, taskID string) (map[string]bool, error) {
	g.mu.Lock()
	said, ok := g.said[taskID]
	g.mu.Unlock()
	if ok {
		return said, nil
	}
	comments, err := g.API.IssueComments(ctx, owner, name, number)
	if err != nil {
		return nil, err
	}
	said = map[string]bool{}
	for _, c := range comments {
		for _, m := range markerRE.FindAllStringSubmatch(c, -1) {
			if m[1] == taskID {
				said[m[2]] = true
			}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.said == nil {
		g.said = map[string]map[string]bool{}
	}
	g.said[taskID] = said
	return said, nil
}

func (g *GitHub) markSaid(taskID, key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.said[taskID][key] = true
}

func (g *GitHub) isFinished(taskID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.finished[taskID]
}
