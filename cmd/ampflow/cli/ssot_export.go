package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
)

// exportReport is what ssot export prints with -o json.
type exportReport struct {
	Dir string `json:"dir"`
	activities.ExportResult
	Remote string `json:"remote,omitempty"`
}

func (a *App) ssotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ssot",
		Short:   "Export the store to git",
		GroupID: groupOperator,
		Example: "  ampflow ssot export --push",
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(a.ssotExportCommand())
	return cmd
}

func (a *App) ssotExportCommand() *cobra.Command {
	var sf storeFlags
	var push bool
	var dir string
	cmd := &cobra.Command{
		Use:   "export [TASK_ID...]",
		Short: "Mirror the SSOT store into a git repository, one JSON file per task",
		Long: "Export writes each task's chain of records, in order, and its head to\n" +
			"tasks/<task_id>.json in the git work tree ssot.git.dir (AMPFLOW_SSOT_GIT_DIR,\n" +
			"default <data_dir>/ssot-git; --dir), initialised when needed, and commits what\n" +
			"changed: an export that finds nothing new makes no commit. With no TASK_ID every\n" +
			"task is exported and the files of tasks the store does not hold are removed.\n" +
			"--push (or ssot.git.push) then pushes the branch to ssot.git.remote, a remote\n" +
			"name or URL. git runs with this process's environment, for push credentials.\n\n" +
			"Exit 0: exported (and pushed). Exit 1: the store, the work tree, git or the push\n" +
			"failed, or a task id cannot name a file (the others are exported).\n" + storeHelp,
		Example: "  ampflow ssot export\n" +
			"  ampflow ssot export T-2026-001\n" +
			"  AMPFLOW_SSOT_GIT_REMOTE=git@example.com:team/ssot.git ampflow ssot export --push",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.Config()
			if err != nil {
				return err
			}
			if dir == "" {
				dir = c.SSOT.Git.Dir
			}
			push = push || c.SSOT.Git.Push
			db, err := a.openStore(cmd.Context(), sf, true)
			if err != nil {
				return err
			}
			defer db.Close()
			if !db.Keyed() {
				return Exit(ExitFailed, errors.New("exporting verifies each chain and needs the decision key that keys them: "+
					"set auth.decision_key or auth.decision_key_file (AMPFLOW_AUTH_DECISION_KEY), the same as the workers'"))
			}
			key, _ := c.StoreDecisionKey()
			ex, err := activities.NewExporter(db, activities.ExportOptions{Dir: dir, Push: push, Remote: c.SSOT.Git.Remote,
				ChainKey: ssot.ChainKey(key)})
			if err != nil {
				return err
			}
			res, err := ex.Export(cmd.Context(), args...)
			if err != nil {
				return err
			}
			rep := exportReport{Dir: ex.Dir(), ExportResult: res}
			if push {
				rep.Remote = c.SSOT.Git.Remote
			}
			if err := a.printExport(rep); err != nil {
				return err
			}
			for _, r := range res.Refused {
				fmt.Fprintf(a.Stderr, "refused %s: %s; its exported file is left as it was\n", r.TaskID, r.Problem)
			}
			if len(res.Refused) > 0 {
				return Exit(ExitFailed, fmt.Errorf("export: %d tasks refused: their chain in the store fails verification or does not extend the exported one (ampflow audit verify)",
					len(res.Refused)))
			}
			if len(res.Skipped) > 0 {
				return Exit(ExitFailed, fmt.Errorf("export: %d task ids cannot name a file and were not exported: %s",
					len(res.Skipped), strings.Join(res.Skipped, ", ")))
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&push, "push", false, "push the commit to ssot.git.remote")
	cmd.Flags().StringVar(&dir, "dir", "", "the git work tree to export to (overrides ssot.git.dir)")
	return cmd
}

func (a *App) printExport(rep exportReport) error {
	if a.JSON() {
		return a.PrintJSON(rep)
	}
	what := "nothing changed, no commit"
	if rep.Committed {
		what = "committed"
	}
	if rep.Pushed {
		what += "; pushed to " + rep.Remote
	}
	_, err := fmt.Fprintf(a.Stdout, "exported %d tasks to %s: %d files changed, %d removed; %s\n",
		rep.Tasks, rep.Dir, rep.Changed, rep.Removed, what)
	return err
}
