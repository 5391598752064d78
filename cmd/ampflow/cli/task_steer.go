package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/ssot"
)

// TaskSay sends a task's running agent a message (POST /v1/tasks/{id}/messages).
func (c *apiClient) TaskSay(ctx context.Context, taskID, text string) (ssot.TaskMessage, error) {
	var out ssot.TaskMessage
	err := c.do(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(taskID)+"/messages", nil, map[string]string{"text": text}, &out)
	return out, err
}

// TaskInterrupt stops a task's running agent (POST /v1/tasks/{id}/interrupt).
func (c *apiClient) TaskInterrupt(ctx context.Context, taskID, reason string) (ssot.TaskMessage, error) {
	var out ssot.TaskMessage
	err := c.do(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(taskID)+"/interrupt", nil, map[string]string{"reason": reason}, &out)
	return out, err
}

// TaskMessages lists what was sent to a task's agent (GET /v1/tasks/{id}/messages).
func (c *apiClient) TaskMessages(ctx context.Context, taskID string) ([]ssot.TaskMessage, error) {
	var out struct {
		Messages []ssot.TaskMessage `json:"messages"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(taskID)+"/messages", nil, nil, &out)
	return out.Messages, err
}

func (a *App) taskSayCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "say TASK_ID MESSAGE",
		Short: "Tell a task's running agent something",
		Long: "Say sends MESSAGE (at most 8192 bytes) to the task's agent as a user turn. Claude Code\n" +
			"gets it at once on its input; another CLI gets it when its run ends, which resumes\n" +
			"its session with the message before the result is read. An interrupted run\n" +
			"(ampflow task interrupt) resumes its session with it. Only an admin or the\n" +
			"coordinator that started the task may send. It prints the message's id;\n" +
			"ampflow task messages shows when the agent got it.",
		Example: "  ampflow task say T-2026-045 \"use the v2 client, not the deprecated one\"",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return UsageError(errors.New("say takes TASK_ID and MESSAGE"))
			}
			return taskIDArg(cmd, args[:1])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(args[1]) == "" {
				return UsageError(errors.New("say needs a MESSAGE that is not empty"))
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			m, err := c.TaskSay(cmd.Context(), args[0], args[1])
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(m)
			}
			_, err = fmt.Fprintf(a.Stdout, "message %d sent to the agent of %s\n", m.ID, args[0])
			return err
		},
	}
}

func (a *App) taskInterruptCommand() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "interrupt TASK_ID [--reason R]",
		Short: "Stop a task's running agent, keeping its session",
		Long: "Interrupt stops the task's running agent within a second: its whole process group,\n" +
			"no process left. Its session and worktree are kept, and the task waits (its\n" +
			"timeline says interrupted) for ampflow task say, which resumes the session with\n" +
			"the message, or for a redispatch. Admins only.",
		Example: "  ampflow task interrupt T-2026-045\n  ampflow task say T-2026-045 \"stop refactoring; fix only the failing test\"",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			m, err := c.TaskInterrupt(cmd.Context(), args[0], reason)
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(m)
			}
			_, err = fmt.Fprintf(a.Stdout, "interrupt %d sent to the agent of %s; ampflow task say resumes it\n", m.ID, args[0])
			return err
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept with the interrupt")
	return cmd
}

func (a *App) taskMessagesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "messages TASK_ID",
		Short: "List the messages and interrupts sent to a task's agent",
		Long: "Messages lists what was sent to the task's agent with ampflow task say and\n" +
			"ampflow task interrupt: who sent it, when, and when the agent got it (DELIVERED,\n" +
			"- while it waits).",
		Example: "  ampflow task messages T-2026-045 -o json",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			ms, err := c.TaskMessages(cmd.Context(), args[0])
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				if ms == nil {
					ms = []ssot.TaskMessage{}
				}
				return a.PrintJSON(ms)
			}
			t := newTable(a.Stdout, "ID", "SENT", "KIND", "SENDER", "DELIVERED", "TEXT")
			for _, m := range ms {
				delivered := "-"
				if m.Delivered() {
					delivered = stamp(m.DeliveredAt)
				}
				t.row(fmt.Sprint(m.ID), stamp(m.CreatedAt), m.Kind, m.Sender, delivered, clip(m.Text, 60))
			}
			return t.flush()
		},
	}
}
