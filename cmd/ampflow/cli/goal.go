package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/integrations/goals"
)

func (a *App) goalCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "goal",
		Short:   "Start and show goals: graphs of tasks that run in parallel",
		GroupID: groupCoordinator,
		Long: "A goal is a graph of tasks: each task starts once the tasks it is blocked by are\n" +
			"done, on a branch of its own made from the target's head at that time, and tasks\n" +
			"whose blockers are done run in parallel (docs/goals.md).",
		Example: "  ampflow goal start -f goal.yaml\n  ampflow goal show G-1a2b3c4d",
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(a.goalStartCommand(), a.goalShowCommand())
	return cmd
}

func (a *App) goalStartCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "start -f FILE",
		Short: "Start a goal from a goal file",
		Long: "Start reads a goal file (YAML or JSON; - for stdin): description, repo, target\n" +
			"(the repository's default branch when absent) and tasks, each with a key, a plan\n" +
			"as task start -f takes it (repo and branch may be left out) and blocked_by. The\n" +
			"file is checked here and again by the API (each field at fault is named, and a\n" +
			"cycle is named: tasks a → b → a form a cycle), then the goal starts and its id\n" +
			"is printed, alone on the last line. A file without tasks asks the server's\n" +
			"planner (goals.planner) to propose the graph, for the admins to approve.",
		Example: "  ampflow goal start -f goal.yaml\n  id=$(ampflow goal start -f goal.yaml | tail -n 1)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return UsageError(errors.New("start needs -f FILE (or -f - for stdin)"))
			}
			raw, err := a.readInput(file)
			if err != nil {
				return Exit(ExitUsage, err)
			}
			js, err := toJSON(raw)
			if err != nil {
				return Exit(ExitFailed, &inputError{what: "goal", raw: raw, fields: []amp.FieldError{{Path: "goal", Problem: err.Error()}}})
			}
			if js, err = absoluteRepos(js); err != nil {
				return Exit(ExitFailed, &inputError{what: "goal", raw: raw, fields: []amp.FieldError{{Path: "repo", Problem: err.Error()}}})
			}
			parse := func(js []byte) error { _, err := goal.Parse(js, "G-00000000", a.Now()); return err }
			if goal.IsDraft(js) {
				// The server's planner proposes the graph; a server
				// without one refuses the file, naming goals.planner.
				parse = func(js []byte) error { _, err := goal.ParseDraft(js, "G-00000000"); return err }
			}
			if err := parse(js); err != nil {
				var ve *amp.ValidationError
				if errors.As(err, &ve) {
					return Exit(ExitFailed, &inputError{what: "goal", raw: raw, fields: ve.Fields})
				}
				return Exit(ExitFailed, err)
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			var out goals.StartResponse
			if err := c.do(cmd.Context(), http.MethodPost, "/v1/goals", nil, json.RawMessage(js), &out); err != nil {
				return err
			}
			if a.JSON() {
				return a.PrintJSON(out)
			}
			fmt.Fprintf(a.Stdout, "goal %s started; ampflow goal show %s\n", out.GoalID, out.GoalID)
			_, err = fmt.Fprintln(a.Stdout, out.GoalID)
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "read the goal file (YAML or JSON) from `FILE`, - for stdin")
	return cmd
}

func (a *App) goalShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a goal: its tasks, their states and costs, what waits on whom",
		Long: "Show reads a goal: its status and target, the decision it waits for, and each\n" +
			"task's status in the goal, task id, own status, cost and the tasks it still\n" +
			"waits on, with the total cost.",
		Example: "  ampflow goal show G-1a2b3c4d\n  ampflow goal show G-1a2b3c4d -o json",
		Args:    exactArgs(1, "ID, the goal's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !goal.ValidID(args[0]) {
				return UsageError(fmt.Errorf("%q is not a goal id (G- and eight hex digits)", args[0]))
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			var v goals.View
			if err := c.do(cmd.Context(), http.MethodGet, "/v1/goals/"+url.PathEscape(args[0]), nil, nil, &v); err != nil {
				return err
			}
			if a.JSON() {
				return a.PrintJSON(v)
			}
			return a.printGoal(v)
		},
	}
}

func (a *App) printGoal(v goals.View) error {
	fmt.Fprintf(a.Stdout, "goal %s: %s\n", v.Goal.ID, v.Status)
	fmt.Fprintf(a.Stdout, "  %s\n  %s into %s · %d tasks · $%.2f\n", oneLine(v.Goal.Description), v.Goal.Repo, v.Target, len(v.Tasks), v.CostUSD)
	if v.Reason != "" {
		fmt.Fprintf(a.Stdout, "  %s\n", v.Reason)
	}
	if d := v.Pending; d != nil {
		opts := make([]string, len(d.Options))
		for i, o := range d.Options {
			opts[i] = o.ID
		}
		fmt.Fprintf(a.Stdout, "  waiting for an admin: %s\n  ampflow decide %s --decision %s --option %s\n",
			oneLine(d.Prompt), d.Subject, d.ID, strings.Join(opts, "|"))
	}
	t := newTable(a.Stdout, "KEY", "STATUS", "TASK", "TASK STATUS", "WAITS ON", "QUEUE", "COST", "BRANCH")
	for _, ts := range v.Tasks {
		t.row(ts.Key, string(ts.Status), dash(ts.TaskID), dash(string(ts.TaskStatus)), dash(strings.Join(ts.WaitingOn, ", ")),
			dash(ts.QueueText()), fmt.Sprintf("$%.2f", ts.CostUSD), ts.Branch)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(v.Queue) > 0 {
		fmt.Fprintf(a.Stdout, "merge queue of %s: %s\n", v.Target, strings.Join(v.Queue, ", "))
	}
	for _, ts := range v.Tasks {
		for _, o := range ts.Overlaps {
			fmt.Fprintf(a.Stdout, "overlap: %s and %s both change %s\n", ts.Key, o.With, strings.Join(o.Files, ", "))
		}
		if ts.Reason != "" {
			fmt.Fprintf(a.Stdout, "%s: %s\n", ts.Key, oneLine(ts.Reason))
		}
	}
	for _, p := range v.Proposals {
		what := "proposed " + strings.Join(p.Keys, ", ")
		if p.Problem != "" {
			what = "refused: " + oneLine(p.Problem)
		}
		if p.Rejected != "" {
			what += "; " + oneLine(p.Rejected)
		}
		fmt.Fprintf(a.Stdout, "planner, round %d, answer %d: %s\n", p.Round, p.Try, what)
	}
	if !v.EndedAt.IsZero() {
		fmt.Fprintf(a.Stdout, "ended %s, after %s\n", v.EndedAt.Local().Format(time.DateTime), v.EndedAt.Sub(v.StartedAt).Round(time.Second))
	}
	return nil
}

// absoluteRepos makes the goal's repo, and each plan's, absolute when it
// is a relative path: the file names them from where the command runs,
// as task start's --repo does.
func absoluteRepos(js []byte) ([]byte, error) {
	var m map[string]any
	if json.Unmarshal(js, &m) != nil || m == nil {
		return js, nil
	}
	abs := func(obj map[string]any) error {
		r, ok := obj["repo"].(string)
		if !ok || r == "" || filepath.IsAbs(r) || amp.RepoIsURL(r) {
			return nil
		}
		p, err := filepath.Abs(r)
		if err == nil {
			obj["repo"] = p
		}
		return err
	}
	if err := abs(m); err != nil {
		return nil, err
	}
	tasks, _ := m["tasks"].([]any)
	for _, t := range tasks {
		if tm, ok := t.(map[string]any); ok {
			if plan, ok := tm["plan"].(map[string]any); ok {
				if err := abs(plan); err != nil {
					return nil, err
				}
			}
		}
	}
	return json.Marshal(m)
}
