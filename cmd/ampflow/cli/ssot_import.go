package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
)

// Bounds of ssot import.
const (
	// importBatch is how many records one transaction appends.
	importBatch = 500
	// importProgress is how many tasks pass between progress lines.
	importProgress = 100
)

// importTask is what ssot import did with one task.
type importTask struct {
	TaskID string `json:"task_id"`
	// FileRecords is the task's records in the file SSOT; StoreRecords
	// the rows of its chain in the store after the import (absent in a
	// dry run).
	FileRecords  int    `json:"file_records"`
	StoreRecords *int64 `json:"store_records,omitempty"`
	Written      int    `json:"written"`
	Kept         int    `json:"kept"`
	// State is what became of task.json: saved, kept (the store holds a
	// state already), none (the task has no task.json), found (a dry run),
	// or why it was not saved.
	State string `json:"state"`
	// Problem says why the task does not match; empty when it does.
	Problem string `json:"problem,omitempty"`
}

// importReport is what ssot import prints with -o json.
type importReport struct {
	OK     bool         `json:"ok"`
	DryRun bool         `json:"dry_run"`
	Tasks  []importTask `json:"tasks"`
	// Records, Written and Kept sum the tasks'.
	Records int `json:"records"`
	Written int `json:"written"`
	Kept    int `json:"kept"`
	// Errors counts the file SSOT's error log entries; ErrorsWritten
	// those the store did not hold yet.
	Errors        int `json:"errors"`
	ErrorsWritten int `json:"errors_written"`
	Mismatches    int `json:"mismatches"`
}

func (a *App) ssotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ssot",
		Short:   "Import a file SSOT into the store, export the store to git",
		GroupID: groupOperator,
		Example: "  ampflow ssot import .ampflow/ssot\n  ampflow ssot export --push",
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(a.ssotImportCommand(), a.ssotExportCommand())
	return cmd
}

func (a *App) ssotImportCommand() *cobra.Command {
	var sf storeFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Copy a file SSOT directory into the SSOT store",
		Long: "Import reads the file SSOT in DIR (tasks/<task_id>/index.jsonl journals, the\n" +
			"older messages/<id>.json layout, task.json, errors.jsonl) and appends each\n" +
			"task's records to its chain in the store, in the order they were written.\n" +
			"A task's task.json, when it parses, becomes the task's state in the store\n" +
			"unless the store holds one already; the error log is copied too. DIR is only\n" +
			"read. Running import again stores nothing twice.\n\n" +
			"Then it counts: each task's records in DIR must be the rows of its chain in\n" +
			"the store. A table per task and a summary are printed.\n\n" +
			"Exit 0: every task imported and its counts match. Exit 1: a record conflicts\n" +
			"with one stored under its id, or a count does not match (the table names the\n" +
			"task and why), or DIR or the store cannot be read. --dry-run opens no store\n" +
			"and only counts what DIR holds.\n" + storeHelp,
		Example: "  ampflow ssot import --dry-run .ampflow/ssot\n" +
			"  ampflow ssot import .ampflow/ssot\n" +
			"  AMPFLOW_SSOT_URL=postgres://ampflow@db:5432/ampflow ampflow ssot import /data/ssot -o json",
		Args: exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if st, err := os.Stat(filepath.Join(dir, "tasks")); err != nil || !st.IsDir() {
				return fmt.Errorf("%s is not a file SSOT: it has no tasks/ directory", dir)
			}
			files, err := activities.NewStore(dir, activities.StoreOptions{})
			if err != nil {
				return err
			}
			rep := importReport{DryRun: dryRun}
			var store ssot.Store // nil in a dry run
			if !dryRun {
				db, err := a.openStore(cmd.Context(), sf, false)
				if err != nil {
					return err
				}
				defer db.Close()
				store = db
			}
			if err := a.runImport(cmd.Context(), files, store, &rep); err != nil {
				return err
			}
			rep.OK = rep.Mismatches == 0
			if err := a.printImport(rep); err != nil {
				return err
			}
			if !rep.OK {
				return Exit(ExitFailed, fmt.Errorf("import: %d of %d tasks do not match; first: %s: %s",
					rep.Mismatches, len(rep.Tasks), firstMismatch(rep).TaskID, firstMismatch(rep).Problem))
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count what DIR holds; open no store, write nothing")
	return cmd
}

// runImport imports every task and the error log; db is nil in a dry run.
func (a *App) runImport(ctx context.Context, files *activities.Store, db ssot.Store, rep *importReport) error {
	ids, err := files.Tasks()
	if err != nil {
		return err
	}
	rep.Tasks = []importTask{}
	for i, id := range ids {
		it, err := importOne(ctx, files, db, id)
		if err != nil {
			return err
		}
		rep.Tasks = append(rep.Tasks, it)
		rep.Records += it.FileRecords
		rep.Written += it.Written
		rep.Kept += it.Kept
		if it.Problem != "" {
			rep.Mismatches++
		}
		if (i+1)%importProgress == 0 && i+1 < len(ids) && !a.JSON() {
			fmt.Fprintf(a.Stderr, "import: %d of %d tasks, %d records\n", i+1, len(ids), rep.Records)
		}
	}
	errs, err := files.Errors()
	if err != nil {
		return err
	}
	rep.Errors = len(errs)
	if db != nil {
		if rep.ErrorsWritten, err = importErrors(ctx, db, errs); err != nil {
			return err
		}
	}
	return nil
}

// importOne imports one task's records and state, then counts its chain.
// Only a failure to reach the store is an error; what is wrong with the
// task is its Problem.
func importOne(ctx context.Context, files *activities.Store, db ssot.Store, id string) (importTask, error) {
	it := importTask{TaskID: id}
	recs, err := files.History(id)
	if err != nil {
		it.Problem = err.Error()
		return it, nil
	}
	it.FileRecords = len(recs)
	raw, terr := files.Task(id)
	state, why := fileState(id, raw, terr)
	if db == nil {
		it.State = "found"
		if state == nil {
			it.State = why
		}
		return it, nil
	}

	entries := make([]ssot.Entry, len(recs))
	for i, r := range recs {
		entries[i] = ssot.Entry{ID: r.ID, Kind: string(r.Kind), RecordedAt: r.RecordedAt, Digest: decisionDigest(r), Body: r.Body}
	}
	for len(entries) > 0 {
		n := min(len(entries), importBatch)
		res, err := db.Append(ctx, id, entries[:n])
		var ce *ssot.ConflictError
		var ie *ssot.InvalidError
		switch {
		case errors.As(err, &ie):
			// An id the store refuses: nothing of the task can be stored.
			it.Problem = "the store refuses it: " + err.Error()
			return it, nil
		case errors.As(err, &ce):
			it.Problem = err.Error()
		case err != nil:
			return it, err
		}
		if it.Problem != "" {
			break
		}
		it.Written += res.Written
		it.Kept += res.Kept
		entries = entries[n:]
	}

	it.State = why
	if state != nil {
		it.State = "saved"
		if _, err := db.Task(ctx, id); err == nil {
			it.State = "kept"
		} else if !errors.Is(err, ssot.ErrNotFound) {
			return it, err
		} else if _, err := db.Save(ctx, id, nil, state); err != nil {
			it.State = "not saved: " + err.Error()
		}
	}

	stored, err := chainIDs(ctx, db, id)
	if err != nil {
		return it, err
	}
	n := int64(len(stored))
	it.StoreRecords = &n
	if it.Problem == "" {
		it.Problem = compareChain(recs, stored)
	}
	return it, nil
}

// compareChain says how a task's file records and its chain in the store
// differ; empty when they hold the same records.
func compareChain(recs []activities.StoredRecord, stored map[string]bool) string {
	for _, r := range recs {
		if !stored[r.ID] {
			return fmt.Sprintf("record %s is not in the store's chain", r.ID)
		}
	}
	if len(stored) != len(recs) {
		return fmt.Sprintf("the file SSOT holds %d records, the store's chain %d", len(recs), len(stored))
	}
	return ""
}

// chainIDs reads the ids of a task's chain in the store.
func chainIDs(ctx context.Context, db ssot.Store, taskID string) (map[string]bool, error) {
	ids := map[string]bool{}
	p := ssot.Page{Limit: ssot.MaxLimit}
	for {
		recs, next, err := db.History(ctx, taskID, p)
		if errors.Is(err, ssot.ErrNotFound) {
			return ids, nil
		}
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			ids[r.ID] = true
		}
		if next == "" {
			return ids, nil
		}
		p.Cursor = next
	}
}

func firstMismatch(rep importReport) importTask {
	for _, t := range rep.Tasks {
		if t.Problem != "" {
			return t
		}
	}
	return importTask{}
}

func (a *App) printImport(rep importReport) error {
	if a.JSON() {
		return a.PrintJSON(rep)
	}
	t := newTable(a.Stdout, "TASK", "FILE", "STORE", "WRITTEN", "KEPT", "STATE", "PROBLEM")
	for _, it := range rep.Tasks {
		stored := "-"
		if it.StoreRecords != nil {
			stored = strconv.FormatInt(*it.StoreRecords, 10)
		}
		t.row(it.TaskID, strconv.Itoa(it.FileRecords), stored, strconv.Itoa(it.Written), strconv.Itoa(it.Kept),
			clip(it.State, 40), it.Problem)
	}
	if err := t.flush(); err != nil {
		return err
	}
	verdict := "counts match"
	if rep.Mismatches > 0 {
		verdict = fmt.Sprintf("%d tasks do not match", rep.Mismatches)
	}
	if rep.DryRun {
		_, err := fmt.Fprintf(a.Stdout, "dry run: %d tasks, %d records, %d error log entries; nothing written\n",
			len(rep.Tasks), rep.Records, rep.Errors)
		return err
	}
	_, err := fmt.Fprintf(a.Stdout, "imported %d tasks: %d records (%d written, %d stored already), %d error log entries (%d written); %s\n",
		len(rep.Tasks), rep.Records, rep.Written, rep.Kept, rep.Errors, rep.ErrorsWritten, verdict)
	return err
}
