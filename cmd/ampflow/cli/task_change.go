package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// changeOutput is the JSON output of cancel and replan.
type changeOutput struct {
	TaskID string      `json:"task_id"`
	Status task.Status `json:"status"`
}

func (a *App) taskCancelCommand() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel TASK_ID --reason R",
		Short: "End a task",
		Long: "Cancel ends a task at the coordinator's request and waits until it is\n" +
			"terminated. --reason is required. It cancels as the API token's name\n" +
			"(api.token), or as the API's own user when it has no tokens.",
		Example: "  ampflow task cancel T-2026-045 --reason \"superseded by T-2026-050\"",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return UsageError(errors.New("cancel needs --reason"))
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			res, err := tasks.Cancel(cmd.Context(), args[0], task.CancelInput{Reason: reason})
			if err != nil {
				return refused(err)
			}
			return a.printChange(args[0], res, "cancelled")
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the task ends (required)")
	return cmd
}

func (a *App) taskReplanCommand() *cobra.Command {
	var file, note string
	cmd := &cobra.Command{
		Use:   "replan TASK_ID -f FILE",
		Short: "Replace a task's remaining subtasks",
		Long: "Replan replaces the subtasks from the current one on. FILE (- for stdin) is a\n" +
			"YAML or JSON list of subtasks, or an object {subtasks: [...]}; each subtask has\n" +
			"subtask_id, description and estimated_lines, checked as in a task_dispatch.\n" +
			"A task takes a replan while it awaits plan approval or is locked. It replans\n" +
			"as the API token's name (api.token).",
		Example: "  ampflow task replan T-2026-045 -f subtasks.yaml --note \"split S2\"\n\n" +
			"  # subtasks.yaml\n  - subtask_id: T-2026-045-S2a\n    description: Move the timer\n    estimated_lines: 40",
		Args: taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return UsageError(errors.New("replan needs -f FILE (or -f - for stdin)"))
			}
			raw, err := a.readInput(file)
			if err != nil {
				return Exit(ExitUsage, err)
			}
			subtasks, err := a.readSubtasks(raw)
			if err != nil {
				return Exit(ExitFailed, err)
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			res, err := tasks.Replan(cmd.Context(), args[0], task.ReplanInput{Subtasks: subtasks, Note: note})
			if err != nil {
				return refused(err)
			}
			return a.printChange(args[0], res, fmt.Sprintf("replanned with %d subtasks", len(subtasks)))
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "read the subtasks from `FILE`, - for stdin")
	cmd.Flags().StringVar(&note, "note", "", "why the plan changes")
	return cmd
}

func (a *App) readSubtasks(raw []byte) ([]amp.Subtask, error) {
	js, err := toJSON(raw)
	if err != nil {
		return nil, &inputError{what: "subtasks", raw: raw, fields: []amp.FieldError{{Path: "subtasks", Problem: err.Error()}}}
	}
	return checkSubtasks(js, a.Now())
}

func (a *App) printChange(taskID string, res task.ChangeResult, what string) error {
	if a.JSON() {
		return a.PrintJSON(changeOutput{TaskID: taskID, Status: res.Status})
	}
	_, err := fmt.Fprintf(a.Stdout, "task %s %s; status %s\n", taskID, what, res.Status)
	return err
}
