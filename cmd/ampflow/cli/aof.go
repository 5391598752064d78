package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/ssot"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// aofCommand gathers the AOF/1 commands: AOF tasks through the HTTP API.
func (a *App) aofCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "aof",
		Short:   "AOF/1 tasks: create, list, show, events, artifacts; dispatch, heartbeat, report, session-end",
		GroupID: groupCoordinator,
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	task := &cobra.Command{
		Use:     "task",
		Short:   "Create and inspect AOF tasks (TASK-YYYY-MM-DD-NNN)",
		Example: "  ampflow aof task create --title 'Users API' --assignee swe-backend\n  ampflow aof task list --assignee me --wait 30s\n  ampflow aof task show TASK-2026-02-09-057\n  ampflow aof task events TASK-2026-02-09-057 -o json",
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	task.AddCommand(a.aofCreateCommand(), a.aofListCommand(), a.aofShowCommand(), a.aofEventsCommand(), a.aofArtifactsCommand())
	cmd.AddCommand(task, a.aofDispatchCommand(), a.aofHeartbeatCommand(), a.aofReportCommand(), a.aofSessionEndCommand())
	return cmd
}

// aofCreate is the body of POST /v1/aof/tasks.
type aofCreate struct {
	TaskID         string `json:"taskId,omitempty"`
	Title          string `json:"title"`
	Body           string `json:"body,omitempty"`
	Assignee       string `json:"assignee,omitempty"`
	Status         string `json:"status,omitempty"`
	ReviewRequired *bool  `json:"reviewRequired,omitempty"`
	ParentTaskID   string `json:"parentTaskId,omitempty"`
}

func (a *App) aofCreateCommand() *cobra.Command {
	var in aofCreate
	var noReview bool
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an AOF task (its id is allocated as TASK-<today>-NNN unless --id)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(in.Title) == "" {
				return UsageError(fmt.Errorf("--title is required"))
			}
			if noReview {
				f := false
				in.ReviewRequired = &f
			}
			api, err := a.api()
			if err != nil {
				return Exit(ExitFailed, err)
			}
			var t wf.Task
			if err := api.do(cmd.Context(), "POST", "/v1/aof/tasks", nil, in, &t); err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(t)
			}
			fmt.Fprintf(a.Stdout, "%s %s\n", t.TaskID, t.Status)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.TaskID, "id", "", "task `id` (TASK-YYYY-MM-DD-NNN); allocated when absent")
	f.StringVar(&in.Title, "title", "", "the task's `title` (required)")
	f.StringVar(&in.Body, "body", "", "the task's `body` (markdown)")
	f.StringVar(&in.Assignee, "assignee", "", "the `agent` it is for")
	f.StringVar(&in.Status, "status", "", "backlog or ready (default ready)")
	f.StringVar(&in.ParentTaskID, "parent", "", "the parent task's `id`, for a delegated task")
	f.BoolVar(&noReview, "no-review", false, "a done outcome goes straight to done (reviewRequired false)")
	return cmd
}

// aofTaskView is GET /v1/aof/tasks/{id}.
type aofTaskView struct {
	wf.Task
	Artifacts map[string]json.RawMessage `json:"artifacts"`
}

func (a *App) aofTask(cmd *cobra.Command, id string) (aofTaskView, error) {
	var v aofTaskView
	api, err := a.api()
	if err != nil {
		return v, Exit(ExitFailed, err)
	}
	if err := api.do(cmd.Context(), "GET", "/v1/aof/tasks/"+url.PathEscape(id), nil, nil, &v); err != nil {
		return v, refused(err)
	}
	return v, nil
}

func (a *App) aofShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show TASK_ID",
		Short: "Show an AOF task: status, delegation depth, work log, run",
		Args:  exactArgs(1, "TASK_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := a.aofTask(cmd, args[0])
			if err != nil {
				return err
			}
			if a.JSON() {
				return a.PrintJSON(v)
			}
			w := a.Stdout
			fmt.Fprintf(w, "%s  %s\n", v.TaskID, v.Title)
			fmt.Fprintf(w, "status:           %s\n", v.Status)
			if v.Assignee != "" {
				fmt.Fprintf(w, "assignee:         %s\n", v.Assignee)
			}
			if v.ParentTaskID != "" {
				fmt.Fprintf(w, "parent:           %s\n", v.ParentTaskID)
			}
			fmt.Fprintf(w, "delegation depth: %d\n", v.Metadata.DelegationDepth)
			fmt.Fprintf(w, "review required:  %v\n", v.Metadata.ReviewRequired)
			if r := v.Run; r != nil {
				// run.json keeps AOF's running once the task has moved on;
				// the run is over when the task has left in_progress.
				status := r.Status
				if status == wf.RunRunning && v.Status != wf.StatusInProgress {
					status = "ended (run.json: " + wf.RunRunning + ")"
				}
				fmt.Fprintf(w, "run:              %s by %s since %s\n", status, r.AgentID, wf.Stamp(r.StartedAt.Time))
			}
			if h := v.Heartbeat; h != nil {
				fmt.Fprintf(w, "heartbeat:        %d beats, expires %s\n", h.BeatCount, wf.Stamp(h.ExpiresAt.Time))
			}
			if r := v.Result; r != nil {
				fmt.Fprintf(w, "result:           %s (tests %d/%d passed)\n", r.Outcome, r.Tests.Passed, r.Tests.Total)
			}
			if a := v.AgentReview; a != nil {
				fmt.Fprintf(w, "agent review:     %s\n", agentReviewLine(*a))
			}
			if d := v.Review; d != nil {
				fmt.Fprintf(w, "review:           %s open (ampflow decide --decision %s --option approve|send_back|block)\n", d.ID, d.ID)
			}
			if len(v.WorkLog) > 0 {
				fmt.Fprintln(w, "work log:")
				for _, l := range v.WorkLog {
					fmt.Fprintln(w, "  "+l)
				}
			}
			if len(v.Artifacts) > 0 {
				names := make([]string, 0, len(v.Artifacts))
				for n := range v.Artifacts {
					names = append(names, n)
				}
				slices.Sort(names)
				fmt.Fprintf(w, "artifacts:        %s\n", strings.Join(names, ", "))
			}
			return nil
		},
	}
}

func (a *App) aofEventsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "events TASK_ID",
		Short: "List an AOF task's logged events, oldest first",
		Args:  exactArgs(1, "TASK_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := a.api()
			if err != nil {
				return Exit(ExitFailed, err)
			}
			all := []ssot.AOFEvent{}
			cursor := ""
			for {
				q := url.Values{"taskId": {args[0]}, "limit": {"1000"}}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var page struct {
					Events     []ssot.AOFEvent `json:"events"`
					NextCursor string          `json:"next_cursor"`
				}
				if err := api.do(cmd.Context(), "GET", "/v1/aof/events?"+q.Encode(), nil, nil, &page); err != nil {
					return refused(err)
				}
				all = append(all, page.Events...)
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
			}
			if a.JSON() {
				return a.PrintJSON(all)
			}
			for _, e := range all {
				fmt.Fprintf(a.Stdout, "%s  %-26s %-14s %s\n", wf.Stamp(e.At), e.Type, e.Actor, e.Payload)
			}
			return nil
		},
	}
}

func (a *App) aofArtifactsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "artifacts TASK_ID [NAME]",
		Short: "Print an AOF task's artifacts (run.json, run_heartbeat.json, run_result.json, inputs/handoff.*)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return UsageError(fmt.Errorf("artifacts takes TASK_ID and an optional NAME, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := a.aofTask(cmd, args[0])
			if err != nil {
				return err
			}
			if len(args) == 2 {
				raw, ok := v.Artifacts[args[1]]
				if !ok {
					return Exit(ExitFailed, fmt.Errorf("task %s has no artifact %s", args[0], args[1]))
				}
				if a.JSON() {
					return a.PrintJSON(raw)
				}
				var text string
				if json.Unmarshal(raw, &text) == nil {
					fmt.Fprint(a.Stdout, text)
				} else {
					fmt.Fprintln(a.Stdout, string(raw))
				}
				return nil
			}
			if a.JSON() {
				return a.PrintJSON(v.Artifacts)
			}
			names := make([]string, 0, len(v.Artifacts))
			for n := range v.Artifacts {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				raw := v.Artifacts[n]
				var text string
				if json.Unmarshal(raw, &text) != nil {
					text = string(raw)
				}
				fmt.Fprintf(a.Stdout, "== %s\n%s\n", n, strings.TrimRight(text, "\n"))
			}
			return nil
		},
	}
}

// agentReviewLine says where the reviewer agent's review stands.
func agentReviewLine(a wf.AgentReviewState) string {
	switch {
	case a.AMPTaskID == "":
		return "none: left to the admins: " + a.Fallback
	case a.Running:
		return fmt.Sprintf("%s (round %d) waits for the reviewer agent", a.AMPTaskID, a.Round)
	case a.Fallback != "":
		return fmt.Sprintf("%s (round %d) left to the admins: %s", a.AMPTaskID, a.Round, a.Fallback)
	case a.Outcome == wf.OutcomeEnded:
		return fmt.Sprintf("%s (round %d) ended: the task left review", a.AMPTaskID, a.Round)
	case a.Outcome == wf.OutcomeNoVerdict:
		return fmt.Sprintf("%s (round %d) ended without a verdict: the admins reviewed", a.AMPTaskID, a.Round)
	}
	return fmt.Sprintf("%s (round %d) %s by the reviewer agent", a.AMPTaskID, a.Round, a.Outcome)
}
