package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// taskIDArg requires one argument, a task id.
func taskIDArg(cmd *cobra.Command, args []string) error {
	if err := exactArgs(1, "TASK_ID")(cmd, args); err != nil {
		return err
	}
	if !task.ValidID(args[0]) {
		return UsageError(fmt.Errorf("%q is not a task id T-YYYY-NNN", args[0]))
	}
	return nil
}

func statusNames() string {
	names := make([]string, 0, len(task.Statuses()))
	for _, s := range task.Statuses() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

func (a *App) taskListCommand() *cobra.Command {
	var (
		status, source string
		page           pageFlags
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tasks, newest first",
		Long: "List shows tasks newest first, with their status, risk, reject count, repo and\n" +
			"the tracker's item each came from; --source keeps one tracker's tasks.\n" +
			"--status keeps one status: " + statusNames() + ".\nWith -o json it prints an array.\n" +
			pageHelp + "\n(Before listings had pages, --limit defaulted to 50; it is now 100.)",
		Example: "  ampflow task list\n  ampflow task list --status awaiting_admin --limit 5 -o json\n  ampflow task list --source github\n  ampflow task list --all",
		Args:    exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if status != "" && !task.Status(status).Valid() {
				return UsageError(fmt.Errorf("--status %q: must be one of %s", status, statusNames()))
			}
			if err := page.check(); err != nil {
				return err
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			list, next, err := readPages(cmd.Context(), page, func(ctx context.Context, q pageQuery) ([]workflows.TaskSummary, string, error) {
				q.Source = source
				if p, ok := tasks.(pager); ok {
					return p.TasksPage(ctx, task.Status(status), q)
				}
				if source != "" {
					return nil, "", errors.New("--source needs the HTTP API")
				}
				list, err := tasks.List(ctx, task.Status(status), q.Limit)
				return list, "", err
			})
			if err != nil {
				return refused(err)
			}
			if done, err := a.printPage(cmd, args, list, len(list), next, "no tasks"); done {
				return err
			}
			// FROM is shown when a task of the page came from a tracker.
			cols := []string{"TASK", "STATUS", "RISK", "REJECTS", "STARTED", "REPO"}
			from := slices.ContainsFunc(list, func(s workflows.TaskSummary) bool { return s.Origin != nil })
			if from {
				cols = append(cols, "FROM")
			}
			t := newTable(a.Stdout, cols...)
			for _, s := range list {
				st := string(s.Status)
				if !s.Running && !s.Status.Terminal() {
					st += " (ended)"
				}
				row := []string{s.TaskID, st, orDash(s.Risk), fmt.Sprint(s.RejectCount), stamp(s.StartedAt), orDash(s.Repo)}
				if from {
					row = append(row, "-")
					if o := s.Origin; o != nil {
						row[len(row)-1] = o.Source + " " + o.ExternalID
					}
				}
				t.row(row...)
			}
			if err := t.flush(); err != nil {
				return err
			}
			return a.printMore(cmd, args, next)
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only tasks in `STATUS`")
	cmd.Flags().StringVar(&source, "source", "", "only tasks started from `TRACKER`'s items (github, api, …)")
	page.add(cmd, "tasks")
	return cmd
}

func (a *App) taskShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show TASK_ID",
		Short: "Show a task's state, pending decision and timeline",
		Long: "Show asks the task workflow, through the HTTP API, for its state: status,\n" +
			"risk, the current subtask (i/n), reject count, CI rounds, the pending decision\n" +
			"with its options, the last error and the timeline. Finished tasks answer too.\n" +
			"-o json prints the state as the workflow reports it.",
		Example: "  ampflow task show T-2026-045\n  ampflow task show T-2026-045 -o json | jq .pending",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			st, err := tasks.State(cmd.Context(), args[0])
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(st)
			}
			return printState(a.Stdout, st)
		},
	}
}

func (a *App) taskHistoryCommand() *cobra.Command {
	var page pageFlags
	cmd := &cobra.Command{
		Use:   "history TASK_ID",
		Short: "List every recorded message, ACK, escalation and decision of a task",
		Long: "History reads the task's records, in the order they were written, from the\n" +
			"SSOT through the HTTP API (GET /v1/tasks/{id}/history). -o json prints an\n" +
			"array of records with their full bodies.\n" + pageHelp,
		Example: "  ampflow task history T-2026-045\n  ampflow task history T-2026-045 --all -o json | jq '.[].id'",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := page.check(); err != nil {
				return err
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			recs, next, err := readPages(cmd.Context(), page, func(ctx context.Context, q pageQuery) ([]ssot.Record, string, error) {
				return c.HistoryPage(ctx, args[0], q)
			})
			if err != nil {
				return refused(err)
			}
			if done, err := a.printPage(cmd, args, recs, len(recs), next, ""); done {
				return err
			}
			t := newTable(a.Stdout, "RECORDED", "KIND", "ID", "WHAT")
			for _, r := range recs {
				t.row(stamp(r.RecordedAt), r.Kind, r.ID, clip(recordSummary(r), 100))
			}
			if err := t.flush(); err != nil {
				return err
			}
			return a.printMore(cmd, args, next)
		},
	}
	page.add(cmd, "records")
	return cmd
}

// recordSummary says in a few words what a stored record is.
func recordSummary(r ssot.Record) string {
	var b map[string]any
	if json.Unmarshal(r.Body, &b) != nil {
		return ""
	}
	str := func(k string) string { s, _ := b[k].(string); return s }
	switch ssot.RecordKind(r.Kind) {
	case ssot.KindMessage:
		s := fmt.Sprintf("%s %s → %s", str("type"), str("from"), str("to"))
		if p, ok := b["payload"].(map[string]any); ok {
			for _, k := range []string{"completion_status", "decision", "escalation_type", "severity", "subtask_id"} {
				if v, ok := p[k].(string); ok {
					s += " " + v
				}
			}
		}
		return s
	case ssot.KindAck:
		return fmt.Sprintf("ack of %s by %s", str("ack_of"), str("from"))
	case ssot.KindDecision:
		if str("option") != "" {
			return fmt.Sprintf("%s decided %s by %s via %s", str("kind"), str("option"), str("by"), str("channel"))
		}
		return fmt.Sprintf("%s raised: %s", str("kind"), str("prompt"))
	}
	switch {
	case str("reason") != "":
		return fmt.Sprintf("cancel by %s: %s", str("by"), str("reason"))
	case b["subtasks"] != nil:
		return fmt.Sprintf("replan by %s", str("by"))
	case b["plan"] != nil:
		return "plan"
	}
	return ""
}

func (a *App) msgCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "msg",
		Short:   "Read recorded messages",
		GroupID: groupCoordinator,
		Example: "  ampflow msg show task_result-T-2026-045-1740580000000",
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show MSG_ID",
		Short: "Print one record of the SSOT by its id",
		Long: "Show prints the record kept under MSG_ID (a msg_id, an ACK record's id or a\n" +
			"decision id) in the SSOT, read through the HTTP API (GET /v1/records/{id}),\n" +
			"body in full. -o json prints the stored record on one line.",
		Example: "  ampflow msg show task_result-T-2026-045-1740580000000\n  ampflow msg show ack-T-2026-045-1740580001000 -o json",
		Args:    exactArgs(1, "MSG_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			r, err := c.Record(cmd.Context(), args[0])
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(r)
			}
			t := newTable(a.Stdout)
			t.row("ID", r.ID)
			t.row("Kind", r.Kind)
			t.row("Task", r.TaskID)
			t.row("Recorded", stamp(r.RecordedAt))
			if err := t.flush(); err != nil {
				return err
			}
			var body bytes.Buffer
			if json.Indent(&body, r.Body, "", "  ") != nil {
				body.Reset()
				body.Write(r.Body)
			}
			_, err = fmt.Fprintf(a.Stdout, "\n%s\n", body.String())
			return err
		},
	})
	return cmd
}
