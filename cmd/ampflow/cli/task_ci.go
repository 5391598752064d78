package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

func (a *App) taskCICommand() *cobra.Command {
	var logs bool
	cmd := &cobra.Command{
		Use:   "ci TASK_ID",
		Short: "Show each round of a task's CI: its commit, state, failing checks and log",
		Long: "CI lists the task's CI rounds (GET /v1/tasks/{id}/ci): one per result read, with\n" +
			"its commit, its state (pending, passed, failed, timed_out, none), the failing\n" +
			"checks and when it started and finished. --log prints the tail of each round's\n" +
			"log and where the whole of it is: the provider's link (github), or the API path\n" +
			"that serves the command provider's kept log. A task whose policy has no CI\n" +
			"(ci.provider none) says so: no CI is not CI passed. -o json prints the answer whole.",
		Example: "  ampflow task ci T-2026-045\n  ampflow task ci T-2026-045 --log\n  ampflow task ci T-2026-045 -o json",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			out, err := c.TaskCI(cmd.Context(), args[0])
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(out)
			}
			return printTaskCI(a.Stdout, out, logs)
		},
	}
	cmd.Flags().BoolVar(&logs, "log", false, "print the tail of each round's log")
	return cmd
}

// TaskCI reads a task's CI rounds (GET /v1/tasks/{id}/ci).
func (c *apiClient) TaskCI(ctx context.Context, taskID string) (httpapi.TaskCIResponse, error) {
	var out httpapi.TaskCIResponse
	err := c.do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(taskID)+"/ci", nil, nil, &out)
	return out, err
}

func printTaskCI(w io.Writer, out httpapi.TaskCIResponse, logs bool) error {
	if out.CI == httpapi.CIOff {
		_, err := fmt.Fprintf(w, "%s: no CI (its policy has none: ci.provider none); results go to review without CI\n", out.TaskID)
		return err
	}
	if len(out.Rounds) == 0 {
		_, err := fmt.Fprintf(w, "%s: CI on, not read yet\n", out.TaskID)
		return err
	}
	fmt.Fprintf(w, "%s: CI %s\n", out.TaskID, out.State)
	t := newTable(w, "ROUND", "SUBTASK", "COMMIT", "STATE", "READS", "STARTED", "FINISHED", "FAILING")
	for _, r := range out.Rounds {
		t.row(fmt.Sprint(r.Round), orDash(r.Subtask), orDash(shortCommit(r.Commit)), r.State, fmt.Sprint(r.Reads),
			stamp(r.StartedAt), stamp(r.FinishedAt), orDash(clip(strings.Join(r.Failing, ", "), 60)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if !logs {
		return nil
	}
	for _, r := range out.Rounds {
		if r.Log == "" && r.LogURL == "" && !r.LogKept {
			continue
		}
		head := fmt.Sprintf("\nround %d log", r.Round)
		switch {
		case r.LogKept:
			head += " (whole: GET " + ssot.CILogPath(out.TaskID, r.Commit) + ")"
		case r.LogURL != "":
			head += " (whole: " + r.LogURL + ")"
		}
		fmt.Fprintln(w, head+":")
		if r.Log != "" {
			fmt.Fprintln(w, "    "+strings.ReplaceAll(strings.TrimRight(r.Log, "\n"), "\n", "\n    "))
		}
	}
	return nil
}

func shortCommit(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ciLine is the CI row of task show.
func ciLine(st task.State) string {
	switch st.CI {
	case task.CIOff:
		return "off (no CI configured)"
	case "":
		return "not read yet"
	}
	return fmt.Sprintf("%s (round %d; ampflow task ci %s)", st.CI, st.CIRound, st.TaskID)
}
