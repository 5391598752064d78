package cli

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/integrations/aof"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// The commands of an AOF task's run: what a coordinator and an agent
// send while it is in progress, and where an agent finds its work.

// agentName is --agent (or --from), else $AMPFLOW_AGENT_NAME; "" leaves
// it to the API, which takes the token's name.
func (a *App) agentName(flag string) string {
	if flag != "" {
		return flag
	}
	v, _ := a.LookupEnv("AMPFLOW_AGENT_NAME")
	return v
}

// aofResult prints an update's answer: its JSON, or the task's status.
func (a *App) aofResult(res wf.Result, what string) error {
	if a.JSON() {
		return a.PrintJSON(res)
	}
	t := res.Task
	line := fmt.Sprintf("%s %s: %s", t.TaskID, what, t.Status)
	if !res.Changed {
		line += " (unchanged"
		if res.Note != "" {
			line += ": " + res.Note
		}
		line += ")"
	}
	if h := t.Heartbeat; h != nil && t.Status == wf.StatusInProgress {
		line += fmt.Sprintf("; heartbeat %d, due by %s", h.BeatCount, wf.Stamp(h.ExpiresAt.Time))
	}
	_, err := fmt.Fprintln(a.Stdout, line)
	return err
}

func (a *App) aofPost(cmd *cobra.Command, path string, body, out any) error {
	api, err := a.api()
	if err != nil {
		return Exit(ExitFailed, err)
	}
	if err := api.do(cmd.Context(), "POST", path, nil, body, out); err != nil {
		return refused(err)
	}
	return nil
}

func (a *App) aofDispatchCommand() *cobra.Command {
	var agent string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "dispatch TASK_ID --agent NAME",
		Short: "Dispatch a ready AOF task to an agent: in_progress, its run and heartbeat started",
		Long: "ready → in_progress: takes the lease of aof/<taskId> for the agent, writes run.json and the first\n" +
			"run_heartbeat.json; the agent heartbeats before --ttl runs out (ampflow aof heartbeat).\n" +
			"A coordinator's or an admin's token; the event log names you as the actor.",
		Example: "  ampflow aof dispatch TASK-2026-02-09-057 --agent swe-backend --ttl 10m",
		Args:    exactArgs(1, "TASK_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if agent == "" {
				return UsageError(fmt.Errorf("--agent is required: the agent that runs the task"))
			}
			if ttl < 0 || ttl > 24*time.Hour {
				return UsageError(fmt.Errorf("--ttl %s: must be from 0 (the default, 5m) to 24h", ttl))
			}
			var res wf.Result
			in := wf.DispatchInput{AgentID: agent, TTLMs: ttl.Milliseconds()}
			if err := a.aofPost(cmd, "/v1/aof/tasks/"+url.PathEscape(args[0])+"/dispatch", in, &res); err != nil {
				return err
			}
			return a.aofResult(res, "dispatched to "+agent)
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "the `agent` that runs the task (required)")
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "the heartbeat's life `D` (default 5m, at most 24h)")
	return cmd
}

func (a *App) aofHeartbeatCommand() *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:     "heartbeat TASK_ID",
		Short:   "Renew the running agent's heartbeat: run_heartbeat.json's expiresAt moves on by the run's TTL",
		Long:    "Sent by the agent running the task (--agent, else $AMPFLOW_AGENT_NAME, else the token's name).",
		Example: "  ampflow aof heartbeat TASK-2026-02-09-057\n  ampflow aof heartbeat TASK-2026-02-09-057 --agent swe-backend -o json",
		Args:    exactArgs(1, "TASK_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res wf.Result
			in := wf.HeartbeatInput{AgentID: a.agentName(agent)}
			if err := a.aofPost(cmd, "/v1/aof/tasks/"+url.PathEscape(args[0])+"/heartbeat", in, &res); err != nil {
				return err
			}
			return a.aofResult(res, "heartbeat")
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "the running `agent` (default: $AMPFLOW_AGENT_NAME, else the token's name)")
	return cmd
}

// aofEnvelope is an AOF/1 message as sent on the wire.
type aofEnvelope struct {
	Protocol  string `json:"protocol"`
	Version   int    `json:"version"`
	Type      string `json:"type"`
	TaskID    string `json:"taskId"`
	FromAgent string `json:"fromAgent"`
	ToAgent   string `json:"toAgent"`
	SentAt    string `json:"sentAt"`
	Payload   any    `json:"payload"`
}

func (a *App) aofReportCommand() *cobra.Command {
	var from, to, outcome, summary, handoff, notes string
	var deliverables, blockers []string
	var total, passed, failed int
	cmd := &cobra.Command{
		Use:   "report TASK_ID --outcome done|partial|blocked|needs_review --summary REF",
		Short: "Send the agent's completion.report: run_result.json, applied when its session ends",
		Long: "Builds the AOF/1 completion.report envelope and sends it (POST /v1/aof/messages). Only the agent\n" +
			"running the task may report, while it is in_progress; the outcome is applied at `ampflow aof\n" +
			"session-end` or when the heartbeat goes stale.",
		Example: "  ampflow aof report TASK-2026-02-09-057 --from swe-backend --outcome done --summary outputs/summary.md \\\n" +
			"    --tests-total 120 --tests-passed 120 --notes 'All acceptance criteria met.'\n" +
			"  ampflow aof report TASK-2026-02-09-057 --outcome blocked --summary outputs/summary.md --blocker 'no database'",
		Args: exactArgs(1, "TASK_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sender := a.agentName(from)
			var missing []string
			if sender == "" {
				missing = append(missing, "--from (or AMPFLOW_AGENT_NAME): your agent's name, the token's")
			}
			if outcome == "" {
				missing = append(missing, "--outcome: done, partial, blocked or needs_review")
			}
			if summary == "" {
				missing = append(missing, "--summary: the summary file's path (summaryRef)")
			}
			if len(missing) > 0 {
				return UsageError(fmt.Errorf("report needs %s", strings.Join(missing, "; ")))
			}
			if deliverables == nil {
				deliverables = []string{}
			}
			if blockers == nil {
				blockers = []string{}
			}
			env := aofEnvelope{Protocol: "aof", Version: 1, Type: wf.TypeCompletionReport, TaskID: args[0], FromAgent: sender, ToAgent: to,
				SentAt: wf.Stamp(a.Now().UTC()), Payload: wf.CompletionReport{Outcome: wf.Outcome(outcome), SummaryRef: summary, HandoffRef: handoff,
					Deliverables: deliverables, Blockers: blockers, Notes: notes, Tests: wf.TestReport{Total: total, Passed: passed, Failed: failed}}}
			var res wf.Result
			if err := a.aofPost(cmd, "/v1/aof/messages", env, &res); err != nil {
				return err
			}
			return a.aofResult(res, "reported "+outcome)
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "your agent's `name`, the token's (default: $AMPFLOW_AGENT_NAME)")
	f.StringVar(&to, "to", "dispatcher", "the `agent` the report is for (toAgent)")
	f.StringVar(&outcome, "outcome", "", "done, partial, blocked or needs_review (required)")
	f.StringVar(&summary, "summary", "", "the summary file's `path` (summaryRef, required)")
	f.StringVar(&handoff, "handoff", "", "a handoff file's `path` (handoffRef)")
	f.StringVar(&notes, "notes", "", "`TEXT` for the reviewer")
	f.StringArrayVar(&deliverables, "deliverable", nil, "a deliverable's `path` (repeatable)")
	f.StringArrayVar(&blockers, "blocker", nil, "a blocker (`TEXT`, repeatable; required with --outcome blocked)")
	f.IntVar(&total, "tests-total", 0, "tests run")
	f.IntVar(&passed, "tests-passed", 0, "tests passed")
	f.IntVar(&failed, "tests-failed", 0, "tests failed")
	return cmd
}

func (a *App) aofSessionEndCommand() *cobra.Command {
	var agent string
	var every bool
	cmd := &cobra.Command{
		Use:   "session-end",
		Short: "End an agent's session: apply the run results of its tasks in progress",
		Long: "AOF's session_end hook: each task in progress with a completion report of the agent moves as its\n" +
			"outcome says (done → review, …). The agent is --agent, else $AMPFLOW_AGENT_NAME, else the token's\n" +
			"name; --every-agent (an admin's or a coordinator's token) ends every agent's runs.",
		Example: "  ampflow aof session-end\n  ampflow aof session-end --agent swe-backend -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name := a.agentName(agent)
			if every && agent != "" {
				return UsageError(fmt.Errorf("--every-agent and --agent: name one agent or every one"))
			}
			if every {
				name = ""
			}
			var res aof.SessionEndResponse
			in := map[string]any{}
			if name != "" {
				in["agentId"] = name
			}
			if err := a.aofPost(cmd, "/v1/aof/session-end", in, &res); err != nil {
				return err
			}
			if a.JSON() {
				return a.PrintJSON(res)
			}
			if len(res.Applied) == 0 {
				fmt.Fprintln(a.Stdout, "no run result to apply")
			}
			for _, t := range res.Applied {
				fmt.Fprintf(a.Stdout, "%s %s\n", t.TaskID, t.Status)
			}
			if res.More {
				fmt.Fprintln(a.Stderr, "more: run ampflow aof session-end again for the rest")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "whose session (default: $AMPFLOW_AGENT_NAME, else the token's name)")
	cmd.Flags().BoolVar(&every, "every-agent", false, "end every agent's runs (admins and coordinators)")
	return cmd
}

func (a *App) aofListCommand() *cobra.Command {
	var assignee, status, cursor string
	var wait time.Duration
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List AOF tasks: yours with --assignee me, waiting with --wait for work to come",
		Long: "GET /v1/aof/tasks: by id, in --status, assigned or dispatched to --assignee (me: the token's name).\n" +
			"--wait long-polls (at most the API's max wait) until there is a task.",
		Example: "  ampflow aof task list --assignee me --status in_progress --wait 30s\n  ampflow aof task list --status review -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			setIf(q, "assignee", assignee)
			setIf(q, "status", status)
			setIf(q, "cursor", cursor)
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			if wait > 0 {
				q.Set("wait", wait.String())
			}
			api, err := a.api()
			if err != nil {
				return Exit(ExitFailed, err)
			}
			var page aof.TasksResponse
			if err := api.do(cmd.Context(), "GET", "/v1/aof/tasks?"+q.Encode(), nil, nil, &page); err != nil {
				return refused(err)
			}
			if a.JSON() {
				if err := a.PrintJSON(page.Tasks); err != nil {
					return err
				}
				if page.NextCursor != "" {
					fmt.Fprintf(a.Stderr, "{\"next_cursor\":%q}\n", page.NextCursor)
				}
				return nil
			}
			for _, t := range page.Tasks {
				agent := t.Assignee
				if t.Run != nil && t.Status == wf.StatusInProgress {
					agent = t.Run.AgentID
				}
				fmt.Fprintf(a.Stdout, "%s  %-11s  %-14s %s\n", t.TaskID, t.Status, agent, t.Title)
			}
			if page.NextCursor != "" {
				fmt.Fprintf(a.Stderr, "more: ampflow aof task list --cursor %s\n", page.NextCursor)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&assignee, "assignee", "", "an `agent`'s work, or me for the token's")
	f.StringVar(&status, "status", "", "only `STATUS`: backlog, ready, in_progress, review, blocked or done")
	f.DurationVar(&wait, "wait", 0, "long-poll up to `D` for a task")
	f.IntVar(&limit, "limit", 0, "at most `N` (1 to 1000; default 100)")
	f.StringVar(&cursor, "cursor", "", "go on from the `CURSOR` a previous page printed")
	return cmd
}
