package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/spf13/cobra"
)

// decisionChannel is how the CLI names itself in a decision's outcome.
const decisionChannel = "cli"

func (a *App) pendingCommand() *cobra.Command {
	var page pageFlags
	cmd := &cobra.Command{
		Use:     "pending",
		Short:   "List the decisions waiting for an admin",
		GroupID: groupAdmin,
		Long: "Pending lists the open decisions of all running tasks: the task, the decision\n" +
			"id, its kind, the question and the options (* marks those that need --note).\n" +
			"-o json prints an array of decisions, [] when none is open. Oldest first.\n" + pageHelp,
		Example: "  ampflow pending\n  ampflow pending --all -o json | jq '.[] | .task_id'",
		Args:    exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := page.check(); err != nil {
				return err
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			ds, next, err := readPages(cmd.Context(), page, func(ctx context.Context, q pageQuery) ([]decision.Decision, string, error) {
				if p, ok := tasks.(pager); ok {
					return p.DecisionsPage(ctx, q)
				}
				ds, err := tasks.Pending(ctx)
				return ds, "", err
			})
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				if err := a.PrintJSON(ds); err != nil {
					return err
				}
				return a.printMore(cmd, args, next)
			}
			if len(ds) == 0 {
				_, err := fmt.Fprintln(a.Stdout, "no pending decisions")
				return err
			}
			t := newTable(a.Stdout, "TASK", "DECISION", "KIND", "PROMPT", "OPTIONS")
			for _, d := range ds {
				t.row(d.Subject, d.ID, string(d.Kind), clip(d.Prompt, 70), optionList(d))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if needsNote(ds...) {
				if _, err := fmt.Fprintln(a.Stdout, "* needs --note"); err != nil {
					return err
				}
			}
			return a.printMore(cmd, args, next)
		},
	}
	page.add(cmd, "decisions")
	return cmd
}

func (a *App) decideCommand() *cobra.Command {
	var option, note, decisionID string
	cmd := &cobra.Command{
		Use:     "decide TASK_ID --option OPTION",
		Short:   "Take a task's pending decision",
		GroupID: groupAdmin,
		Long: "Decide answers a task's pending decision, as the chat buttons do. Without\n" +
			"--decision it takes whatever decision is pending; with it, it refuses when that\n" +
			"is no longer the pending one, so an answer read from an older listing cannot\n" +
			"land on a newer question. The decider is the API token's name (api.token),\n" +
			"which needs the admin role; an API without tokens (ampflow dev) decides as\n" +
			"its own admin, the operating-system user it runs as.",
		Example: "  ampflow decide T-2026-045 --option approve\n" +
			"  ampflow decide T-2026-045 --decision T-2026-045-d1 --option reject --note \"too broad\"",
		Args: taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if option == "" {
				return UsageError(errors.New("decide needs --option"))
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			taskID := args[0]
			st, err := tasks.State(cmd.Context(), taskID)
			if err != nil {
				return refused(err)
			}
			d := st.Pending
			switch {
			case d == nil:
				return Exit(ExitFailed, fmt.Errorf("task %s has no pending decision (status %s)", taskID, st.Status))
			case decisionID != "" && decisionID != d.ID:
				return Exit(ExitFailed, fmt.Errorf("decision: %s is not the pending decision of task %s; pending now is %s (%s): read it with 'ampflow task show %s'",
					decisionID, taskID, d.ID, d.Kind, taskID))
			}
			opt, ok := d.Option(option)
			if !ok {
				return Exit(ExitFailed, fmt.Errorf("option: %q is not an option of decision %s; choose %s", option, d.ID, strings.ReplaceAll(optionChoices(*d), "|", ", ")))
			}
			if opt.NoteRequired && strings.TrimSpace(note) == "" {
				return Exit(ExitFailed, fmt.Errorf("note: option %s of decision %s needs --note", option, d.ID))
			}
			res, err := tasks.Decide(cmd.Context(), taskID, decision.Answer{
				DecisionID: d.ID, Option: option, Note: note, Channel: decisionChannel,
			})
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(res)
			}
			_, err = fmt.Fprintf(a.Stdout, "decided %s (%s) on %s: %s by %s; status %s\n",
				d.ID, d.Kind, taskID, res.Outcome.Option, res.Outcome.By, res.Status)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&option, "option", "", "the chosen `OPTION` id (see ampflow pending)")
	f.StringVar(&note, "note", "", "a note; some options require one")
	f.StringVar(&decisionID, "decision", "", "refuse unless `ID` is still the pending decision")
	return cmd
}
