package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

func (a *App) taskCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "task",
		Short:   "Start, inspect, cancel and replan tasks",
		GroupID: groupCoordinator,
		Long: "Task gathers the coordinator's commands. Each task is one Temporal workflow,\n" +
			"named by its task_id (T-YYYY-NNN).",
		Example: "  ampflow task start -f plan.yaml\n  ampflow task list --status in_review\n  ampflow task show T-2026-045",
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(a.taskStartCommand(), a.taskListCommand(), a.taskShowCommand(),
		a.taskHistoryCommand(), a.taskCancelCommand(), a.taskReplanCommand(), a.taskToolsCommand(),
		a.taskSayCommand(), a.taskInterruptCommand(), a.taskMessagesCommand(), a.taskLogsCommand(), a.taskCICommand())
	return cmd
}

// subcommandArgs refuses a group command run without a known subcommand.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return UsageError(fmt.Errorf("%s needs a subcommand", cmd.Name()))
	}
	msg := fmt.Sprintf("unknown %s subcommand %q", cmd.Name(), args[0])
	cmd.SuggestionsMinimumDistance = 2
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + s[0] + "?"
	}
	return UsageError(errors.New(msg))
}

// startOutput is the JSON output of task start.
type startOutput struct {
	TaskID  string             `json:"task_id"`
	Status  task.Status        `json:"status"`
	Pending *decision.Decision `json:"pending,omitempty"`
	// PlanApproval is how the plan is approved (auto or admin), from
	// the task's policy; absent when the task has not said.
	PlanApproval task.Handling `json:"plan_approval,omitempty"`
	Reason       string        `json:"reason,omitempty"`
	// Checked is false when the branch check had not finished in time.
	Checked bool `json:"checked"`
}

func (a *App) taskStartCommand() *cobra.Command {
	var (
		file, taskID, handling, key string
		wait                        bool
		priority                    int
		waitTimeout                 time.Duration
		line                        lineFlags
	)
	cmd := &cobra.Command{
		Use:   `start ("TEXT" --repo PATH | -f FILE)`,
		Short: "Start a task from one line, or from a task_dispatch payload",
		Long: "Start starts a task. With TEXT it makes the plan itself: TEXT is the description\n" +
			"and the one subtask, --repo the repository (a local path or a URL, which each\n" +
			"worker mirrors under data_dir/repos and pushes the branch back to), --criteria the\n" +
			"acceptance criteria (TEXT itself when none), --risk the risk level (low), and\n" +
			"the branch is named after TEXT (ampflow/add-membercount-to-dial) unless --branch\n" +
			"names it; the worker makes the branch at the default branch's head when the\n" +
			"repository lacks it.\n\n" +
			"With -f it reads the coordinator's plan, a task_dispatch payload in YAML or JSON,\n" +
			"from FILE (- for stdin). Either way the plan is checked strictly against AMP/1.0\n" +
			"(failing fields are named plan.…) and the task starts under --task-id or the\n" +
			"year's next free id; a --task-id in use is refused (exit 1). With\n" +
			"--idempotency-key, a retry of the same start answers with the task the first one\n" +
			"started, not a second task; with --external-id, any start for the same item of\n" +
			"a tracker (--source, api by default) answers with the item's task.\n" +
			"The task runs by the worker's policy, not this configuration's; --handling\n" +
			"admin makes its plan wait for an admin whatever the policy says. The task's\n" +
			"coordinator is the API token's name (api.token). Start then waits (up to 10s)\n" +
			"for the branch check and exits 1 with the reason if the task was refused.\n\n" +
			"In text output the task id is the last line of stdout, alone, so scripts can\n" +
			"take it with tail -n 1. With --wait, start follows the task until it is done\n" +
			"(exit 0) or terminated (exit 1), showing its status as it changes.",
		Example: "  ampflow task start \"Add MemberCount to Dial\" --repo . --criteria \"Dial has MemberCount\" --wait\n" +
			"  ampflow task start -f plan.yaml\n" +
			"  id=$(ampflow task start -f plan.json | tail -n 1)\n" +
			"  ampflow task start -f plan.yaml --idempotency-key plan-42\n" +
			"  ampflow task start \"Fix the login race\" --repo ~/src/app --external-id PROJ-7 --source jira\n" +
			"  ampflow task start -f plan.yaml --task-id T-2026-045 --handling admin --wait --wait-timeout 2h",
		Args: maxArgs(1, `"TEXT", the task in one line, or none with -f`),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && file != "":
				return UsageError(errors.New(`start takes "TEXT" or -f FILE, not both`))
			case len(args) == 0 && file == "":
				return UsageError(errors.New(`start needs -f FILE (or -f - for stdin), or "TEXT" --repo PATH`))
			case len(args) == 0 && line.set(cmd):
				return UsageError(errors.New("--repo, --criteria, --risk and --branch make a plan from TEXT; with -f the plan says them"))
			}
			if taskID != "" && !task.ValidID(taskID) {
				return UsageError(fmt.Errorf("--task-id %q is not T-YYYY-NNN", taskID))
			}
			h := task.Handling(handling)
			if h != "" && h != task.HandlingAuto && h != task.HandlingAdmin {
				return UsageError(fmt.Errorf("--handling %q: must be auto or admin", handling))
			}
			if waitTimeout < 0 {
				return UsageError(errors.New("--wait-timeout must not be negative"))
			}
			if problem := workflows.CheckIdempotencyKey(key); problem != "" {
				return UsageError(fmt.Errorf("--idempotency-key: %s", problem))
			}
			origin, err := line.origin()
			if err != nil {
				return err
			}
			if priority < task.MinPriority || priority > task.MaxPriority {
				return UsageError(fmt.Errorf("--priority %d: must be %d to %d", priority, task.MinPriority, task.MaxPriority))
			}
			in := task.Input{TaskID: taskID, Handling: h, Origin: origin, Priority: priority}
			if len(args) == 1 {
				brief, err := line.brief(args[0])
				if err != nil {
					return err
				}
				raw, err := json.Marshal(brief.Plan())
				if err != nil {
					return err
				}
				if in.Plan, err = checkPlan(raw, taskID, a.Now()); err != nil {
					return Exit(ExitFailed, err)
				}
				in.CreateBranch = true
				return a.startTask(cmd, in, key, wait, waitTimeout)
			}
			raw, err := a.readInput(file)
			if err != nil {
				return Exit(ExitUsage, err)
			}
			if in.Plan, err = a.readPlan(raw, taskID, a.Now()); err != nil {
				return Exit(ExitFailed, err)
			}
			// A plan's branch that does not exist yet is made at the
			// default branch's head, as from one line.
			in.CreateBranch = true
			return a.startTask(cmd, in, key, wait, waitTimeout)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "read the plan (task_dispatch payload, YAML or JSON) from `FILE`, - for stdin")
	line.add(cmd)
	f.StringVar(&taskID, "task-id", "", "start under this `ID` (T-YYYY-NNN) instead of the year's next")
	f.StringVar(&handling, "handling", "", "plan approval: admin asks an admin whatever the risk level (auto or admin)")
	f.StringVar(&key, "idempotency-key", "", "retry-safe start: a start with a `KEY` you used before answers with the task it started")
	f.IntVar(&priority, "priority", 0, "order the task's agent runs in a runner host's queue: the higher first, -100 to 100")
	f.BoolVar(&wait, "wait", false, "follow the task until it is done or terminated")
	f.DurationVar(&waitTimeout, "wait-timeout", 0, "give up waiting after `D` (exit 1; the task runs on); 0 waits as long as it takes")
	return cmd
}

func (a *App) startTask(cmd *cobra.Command, in task.Input, key string, wait bool, waitTimeout time.Duration) error {
	if _, err := a.clientConfig(); err != nil {
		return err
	}
	tasks, err := a.tasks()
	if err != nil {
		return err
	}
	// The coordinator, and the scope of the key, is the API's caller: the
	// token's name.
	taskID := in.TaskID
	ctx := withIdempotencyKey(cmd.Context(), key)
	if taskID != "" {
		err = tasks.Start(ctx, in)
	} else {
		taskID, err = tasks.StartNext(ctx, in, a.Now().Year())
	}
	if err != nil {
		return refused(err)
	}

	st, err := poll(ctx, tasks, taskID, a.pollInterval, a.startCheckWait, nil, func(st task.State) bool {
		return passedCheck(st) || st.Status.Terminal()
	})
	checked := err == nil
	if err != nil && !errors.Is(err, errWaitTimedOut) {
		a.printStarted(taskID, st, false)
		return refused(err)
	}
	if st.TaskID == "" {
		st.TaskID, st.Status = taskID, task.StatusAwaitingApproval
	}
	if !checked && !a.JSON() {
		fmt.Fprintf(a.Stderr, "ampflow: task %s started, but its branch check did not finish within %s: is an ampflow worker running?\n",
			taskID, task.FormatDuration(a.startCheckWait))
	}
	if st.Status == task.StatusTerminated {
		a.printStarted(taskID, st, checked)
		return terminatedError(st)
	}
	if wait {
		if !a.JSON() {
			a.printStartedNote(st, checked)
		}
		if st, err = a.waitDone(ctx, tasks, taskID, waitTimeout, a.JSON()); err != nil {
			a.printID(taskID)
			return err
		}
		if a.JSON() {
			return a.PrintJSON(startOutput{TaskID: taskID, Status: st.Status, Reason: st.Reason, Checked: true})
		}
		a.printID(taskID)
		if st.Status == task.StatusTerminated {
			return terminatedError(st)
		}
		return nil
	}
	return a.printStarted(taskID, st, checked)
}

// readPlan turns the file's text into a validated plan.
func (a *App) readPlan(raw []byte, taskID string, now time.Time) (amp.TaskDispatch, error) {
	js, err := toJSON(raw)
	if err != nil {
		return amp.TaskDispatch{}, &inputError{what: "plan", raw: raw, fields: []amp.FieldError{{Path: "plan", Problem: err.Error()}}}
	}
	return checkPlan(js, taskID, now)
}

// printStarted reports a start: a note, then the task id alone on the
// last line; JSON prints one object.
func (a *App) printStarted(taskID string, st task.State, checked bool) error {
	if a.JSON() {
		return a.PrintJSON(startOutput{TaskID: taskID, Status: st.Status, Pending: st.Pending, PlanApproval: st.PlanApproval, Reason: st.Reason, Checked: checked})
	}
	a.printStartedNote(st, checked)
	_, err := fmt.Fprintln(a.Stdout, taskID)
	return err
}

func (a *App) printStartedNote(st task.State, checked bool) {
	switch {
	case st.Status == task.StatusTerminated:
		fmt.Fprintf(a.Stdout, "task %s refused\n", st.TaskID)
	case st.Pending != nil:
		fmt.Fprintf(a.Stdout, "task %s started; %s: %s\n  ampflow decide %s --decision %s --option %s\n",
			st.TaskID, cmp.Or(planHandling(st), "waiting for an admin"), oneLine(st.Pending.Prompt), st.TaskID, st.Pending.ID, optionChoices(*st.Pending))
	case checked && planHandling(st) != "":
		fmt.Fprintf(a.Stdout, "task %s started; %s\n", st.TaskID, planHandling(st))
	case checked:
		fmt.Fprintf(a.Stdout, "task %s started: %s\n", st.TaskID, st.Status)
	default:
		fmt.Fprintf(a.Stdout, "task %s started\n", st.TaskID)
	}
}

// planHandling says what the plan's approval does, from the task's
// policy: "plan approved automatically: low risk", "plan waits for an
// admin: high risk"; "" when the task has not said.
func planHandling(st task.State) string {
	switch st.PlanApproval {
	case task.HandlingAuto:
		return fmt.Sprintf("plan approved automatically: %s risk", st.Risk)
	case task.HandlingAdmin:
		return fmt.Sprintf("plan waits for an admin: %s risk", st.Risk)
	}
	return ""
}

// printID ends text output with the task id; JSON output is left alone.
func (a *App) printID(taskID string) {
	if !a.JSON() {
		fmt.Fprintln(a.Stdout, taskID)
	}
}
