// Package intake turns the items of trackers into tasks: a GitHub issue
// that gets the intake's label, or is assigned to its login, becomes one
// task (idempotent by the issue, through the task's origin in the SSOT),
// and the task's progress is commented on the issue. Issues arrive by
// polling with ETags and from GitHub's signed webhook.
package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// Source is the origin's source of the tasks GitHub issues start.
const Source = "github"

// GitHubAPI is what the intake asks of GitHub (*github.Client).
type GitHubAPI interface {
	Issues(ctx context.Context, owner, repo string, q github.IssueQuery, ifNoneMatch string) ([]github.Issue, string, bool, error)
	GetIssue(ctx context.Context, owner, repo string, number int) (github.Issue, error)
	IssueComments(ctx context.Context, owner, repo string, number int) ([]string, error)
	CommentIssue(ctx context.Context, owner, repo string, number int, body string) error
	CloseIssue(ctx context.Context, owner, repo string, number int) error
}

// Starter starts in once for its origin and returns the origin's task
// (workflows.StartOnce).
type Starter func(ctx context.Context, in task.Input) (taskID string, started bool, err error)

// Store reads the tasks the issues started (*ssot.DB).
type Store interface {
	TaskList(ctx context.Context, f ssot.TaskFilter, p ssot.Page) ([]ssot.TaskState, string, error)
	Task(ctx context.Context, taskID string) (ssot.TaskState, error)
}

// GitHub is the GitHub issues intake. Build it with its fields set, then
// Run it; IssueEvent takes the webhook's deliveries.
type GitHub struct {
	Config config.IntakeGitHub
	API    GitHubAPI
	Start  Starter
	Store  Store
	// DashboardURL is the dashboard's root that comments link to; empty
	// leaves the links out.
	DashboardURL string
	Logger       *slog.Logger

	// takes serialises this process's starts of issues.
	takes sync.Mutex
	mu    sync.Mutex
	etags map[string]string
	// said holds the notices each task's issue carries, read from its
	// comments once; finished holds the tasks with nothing left to say.
	said     map[string]map[string]bool
	finished map[string]bool
}

// Run polls the repositories' issues and comments the tasks' progress
// every poll interval until ctx ends.
func (g *GitHub) Run(ctx context.Context) error {
	t := time.NewTicker(g.Config.PollInterval)
	defer t.Stop()
	for {
		g.Poll(ctx)
		g.Follow(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll reads each repository's open issues that the label or assignee
// picks (an unchanged list costs nothing, by its ETag) and takes them.
func (g *GitHub) Poll(ctx context.Context) {
	for _, r := range g.Config.Repos {
		owner, name, _ := strings.Cut(r.Name, "/")
		for _, q := range g.queries() {
			key := r.Name + "?" + q.Label + "&" + q.Assignee
			list, etag, notModified, err := g.API.Issues(ctx, owner, name, q, g.etag(key))
			if err != nil {
				g.log().Warn("github intake: listing issues", "repo", r.Name, "error", err)
				continue
			}
			if notModified {
				continue
			}
			failed := false
			for _, is := range list {
				if _, err := g.take(ctx, r, is); err != nil {
					failed = true
					g.log().Warn("github intake: starting the task of an issue", "issue", externalID(r.Name, is.Number), "error", err)
				}
			}
			if !failed { // else the list is read whole again next time
				g.setETag(key, etag)
			}
		}
	}
}

func (g *GitHub) queries() []github.IssueQuery {
	var qs []github.IssueQuery
	if g.Config.Label != "" {
		qs = append(qs, github.IssueQuery{Label: g.Config.Label})
	}
	if g.Config.Assignee != "" {
		qs = append(qs, github.IssueQuery{Assignee: g.Config.Assignee})
	}
	return qs
}

// picks reports whether the intake takes is: open, with the label or
// assigned to the login.
func (g *GitHub) picks(is github.Issue) bool {
	if is.State != "" && is.State != "open" {
		return false
	}
	eq := func(want string) func(string) bool { return func(s string) bool { return strings.EqualFold(s, want) } }
	return (g.Config.Label != "" && slices.ContainsFunc(is.Labels, eq(g.Config.Label))) ||
		(g.Config.Assignee != "" && slices.ContainsFunc(is.Assignees, eq(g.Config.Assignee)))
}

// take starts the task of an issue, once: a second take of the issue, from
// here, the webhook, another worker or after a restart, answers with the
// first task.
func (g *GitHub) take(ctx context.Context, r config.IntakeRepo, is github.Issue) (string, error) {
	g.takes.Lock()
	defer g.takes.Unlock()
	in := task.Input{Plan: Plan(r, is, g.Config.Risk), CreateBranch: true,
		Origin: &task.Origin{Source: Source, ExternalID: externalID(r.Name, is.Number), URL: is.URL}}
	id, started, err := g.Start(ctx, in)
	if err != nil {
		return "", err
	}
	if started {
		g.log().Info("github intake: issue became a task", "issue", in.Origin.ExternalID, "task_id", id)
	}
	return id, nil
}

// IssueEvent takes an "issues" delivery of GitHub's webhook, its
// signature checked: nothing in it is trusted beyond "look now", so the
// issue is read again from GitHub and taken if the intake picks it.
func (g *GitHub) IssueEvent(ctx context.Context, delivery string, body []byte) error {
	var ev struct {
		Action string `json:"action"`
		Issue  struct {
			Number int `json:"number"`
		} `json:"issue"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Errorf("reading issues delivery %s: %w", delivery, err)
	}
	switch ev.Action {
	case "opened", "reopened", "labeled", "assigned":
	default:
		return nil
	}
	i := slices.IndexFunc(g.Config.Repos, func(r config.IntakeRepo) bool { return strings.EqualFold(r.Name, ev.Repository.FullName) })
	if i < 0 || ev.Issue.Number <= 0 {
		return nil // not a repository of the intake's
	}
	r := g.Config.Repos[i]
	owner, name, _ := strings.Cut(r.Name, "/")
	is, err := g.API.GetIssue(ctx, owner, name, ev.Issue.Number)
	if err != nil {
		return fmt.Errorf("reading the issue of delivery %s: %w", delivery, err)
	}
	if !g.picks(is) {
		return nil
	}
	_, err = g.take(ctx, r, is)
	return err
}

func (g *GitHub) etag(key string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.etags[key]
}

func (g *GitHub) setETag(key, etag string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.etags == nil {
		g.etags = map[string]string{}
	}
	g.etags[key] = etag
}

func (g *GitHub) log() *slog.Logger {
	if g.Logger == nil {
		return slog.Default()
	}
	return g.Logger
}

// externalID names an issue: OWNER/NAME#N.
func externalID(repo string, number int) string {
	return fmt.Sprintf("%s#%d", strings.ToLower(repo), number)
}

// parseExternalID splits OWNER/NAME#N.
func parseExternalID(id string) (owner, name string, number int, err error) {
	repo, n, ok := strings.Cut(id, "#")
	owner, name, ok2 := strings.Cut(repo, "/")
	if _, serr := fmt.Sscanf(n, "%d", &number); !ok || !ok2 || serr != nil || number <= 0 {
		return "", "", 0, errors.New("not OWNER/NAME#N: " + id)
	}
	return owner, name, number, nil
}
