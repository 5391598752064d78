package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/ssot"
)

// Bounds of audit verify.
var (
	// verifyPage is how many tasks audit verify lists at a time; progress
	// is printed after each page but the last.
	verifyPage = ssot.MaxLimit
	// maxVerifyFailures bounds the broken chains a report lists; the
	// rest are counted.
	maxVerifyFailures = 100
)

// verifyReport is what audit verify prints with -o json.
type verifyReport struct {
	OK bool `json:"ok"`
	// TaskID is the one task verified, when one was named.
	TaskID string `json:"task_id,omitempty"`
	// Tasks counts the tasks checked; Records the records of those
	// whose chain verifies.
	Tasks   int   `json:"tasks"`
	Records int64 `json:"records"`
	// Head is the chain head of the one task verified.
	Head     *ssot.Head      `json:"head,omitempty"`
	Failures []verifyFailure `json:"failures"`
	// MoreFailures counts broken chains beyond those listed.
	MoreFailures int `json:"more_failures,omitempty"`
	// RowsChecked counts the table rows compared with their chains (a
	// whole-store verify only); Rows lists those that disagree, and
	// MoreRows counts the rest.
	RowsChecked *ssot.CrossCheckCounts `json:"rows_checked,omitempty"`
	Rows        []rowFailure           `json:"rows"`
	MoreRows    int                    `json:"more_rows,omitempty"`
}

// rowFailure is a table row that disagrees with its chain: changed by
// hand.
type rowFailure struct {
	Table   string `json:"table"`
	Key     string `json:"key"`
	Problem string `json:"problem"`
}

// verifyFailure is the first record of a task's chain that does not verify.
type verifyFailure struct {
	TaskID string `json:"task_id"`
	Seq    int64  `json:"seq"`
	// ID is the record's id; empty when the record is missing.
	ID      string `json:"id,omitempty"`
	Problem string `json:"problem"`
}

func (a *App) auditCommand() *cobra.Command {
	audit := &cobra.Command{
		Use:     "audit",
		Short:   "Check the SSOT store's tamper-evident history",
		GroupID: groupOperator,
		Example: "  ampflow audit verify",
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	var sf storeFlags
	verify := &cobra.Command{
		Use:   "verify [TASK_ID]",
		Short: "Verify the hash chains of every task, or of one, and the tables derived from them",
		Long: "Verify walks each task's chain of records in the SSOT store (or TASK_ID's) and\n" +
			"recomputes every link: the hash of each record's body, and the HMAC, keyed with\n" +
			"the decision key (auth.decision_key, AMPFLOW_AUTH_DECISION_KEY, or the key\n" +
			"`ampflow dev` keeps in data_dir), of its fields and the record before it, up to\n" +
			"the chain head the store keeps. A row edited, deleted or inserted in the\n" +
			"database behind ampflow's back breaks the chain there, even with its hashes\n" +
			"computed again: only a holder of the decision key can compute them.\n" +
			"Without TASK_ID it also compares the rows derived from chains with them: each\n" +
			"gate's status (gates) with its chain's signal and outcome, each decided contract\n" +
			"(contracts) with its gate's outcome, each budget raise (gate_budget_raises) with\n" +
			"its record in the budget-raises chain, and names, by table and key, a row that\n" +
			"disagrees: one changed by hand. A gate resolving while it runs is no finding.\n\n" +
			"Exit 0: every chain verifies; a summary is printed (tasks, records verified).\n" +
			"Exit 1: a chain does not verify, a row disagrees with its chain, the store cannot\n" +
			"be read, or TASK_ID has no records; the first record that does not verify is\n" +
			"named for each broken task (up to 100), each row that disagrees (up to 100),\n" +
			"and the error names the first of them. Progress goes to stderr every 1,000\n" +
			"tasks. -o json prints {ok, tasks, records, head, failures, rows_checked, rows}.\n" + storeHelp,
		Example: "  ampflow audit verify\n" +
			"  ampflow audit verify T-2026-001\n" +
			"  ampflow audit verify --ssot-url postgres://ampflow@db:5432/ampflow -o json | jq .failures",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return UsageError(fmt.Errorf("verify takes at most 1 argument (TASK_ID), got %d", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := a.openStore(cmd.Context(), sf, true)
			if err != nil {
				return err
			}
			defer db.Close()
			if !db.Keyed() {
				return Exit(ExitFailed, errors.New("verifying the chains needs the decision key that keys them: "+
					"set auth.decision_key or auth.decision_key_file (AMPFLOW_AUTH_DECISION_KEY), the same as the workers'"))
			}
			var rep verifyReport
			if len(args) == 1 {
				err = a.verifyOne(cmd.Context(), db, args[0], &rep)
			} else {
				err = a.verifyAll(cmd.Context(), db, &rep)
			}
			if err != nil {
				return err
			}
			rep.OK = len(rep.Failures) == 0 && len(rep.Rows) == 0
			if err := a.printVerify(rep); err != nil {
				return err
			}
			if !rep.OK {
				return Exit(ExitFailed, errors.New(rep.failed()))
			}
			return nil
		},
	}
	sf.add(verify)
	audit.AddCommand(verify)
	return audit
}

func (a *App) verifyOne(ctx context.Context, db ssot.Chains, taskID string, rep *verifyReport) error {
	head, err := db.Verify(ctx, taskID)
	rep.Tasks, rep.TaskID = 1, taskID
	if err != nil {
		return rep.add(taskID, err)
	}
	rep.Records, rep.Head = head.Seq, &head
	return nil
}

// failed says why a report fails: its first broken chain, else its first
// row that disagrees.
func (rep *verifyReport) failed() string {
	if len(rep.Failures) > 0 {
		msg := fmt.Sprintf("audit failed: %s", chainProblem(rep.Failures[0]))
		if n := len(rep.Failures) + rep.MoreFailures; n > 1 {
			msg += fmt.Sprintf(" (%d tasks do not verify)", n)
		}
		if n := len(rep.Rows) + rep.MoreRows; n > 0 {
			msg += fmt.Sprintf("; %s disagree with their chains", plural(int64(n), "row"))
		}
		return msg
	}
	r := rep.Rows[0]
	msg := fmt.Sprintf("audit failed: %s", (&ssot.RowError{Table: r.Table, Key: r.Key, Problem: r.Problem}).Error())
	if n := len(rep.Rows) + rep.MoreRows; n > 1 {
		msg += fmt.Sprintf(" (%d rows disagree with their chains)", n)
	}
	return msg
}

// crossChecker compares the tables derived from chains with them
// (*ssot.DB).
type crossChecker interface {
	CrossCheck(ctx context.Context, found func(*ssot.RowError) error) (ssot.CrossCheckCounts, error)
}

// verifyAll verifies every chain, then, when db can, every row derived
// from one.
func (a *App) verifyAll(ctx context.Context, db ssot.Chains, rep *verifyReport) error {
	if err := a.verifyChains(ctx, db, rep); err != nil {
		return err
	}
	cc, ok := db.(crossChecker)
	if !ok {
		return nil
	}
	n, err := cc.CrossCheck(ctx, func(e *ssot.RowError) error {
		if len(rep.Rows) == maxVerifyFailures {
			rep.MoreRows++
			return nil
		}
		rep.Rows = append(rep.Rows, rowFailure{Table: e.Table, Key: e.Key, Problem: e.Problem})
		return nil
	})
	if err != nil {
		return fmt.Errorf("comparing the tables with their chains: %w", err)
	}
	rep.RowsChecked = &n
	return nil
}

func (a *App) verifyChains(ctx context.Context, db ssot.Chains, rep *verifyReport) error {
	p := ssot.Page{Limit: verifyPage}
	for {
		ids, next, err := db.Tasks(ctx, p)
		if err != nil {
			return err
		}
		for _, id := range ids {
			head, err := db.Verify(ctx, id)
			rep.Tasks++
			rep.Records += head.Seq
			if err != nil {
				if err := rep.add(id, err); err != nil {
					return err
				}
			}
		}
		if next == "" {
			return nil
		}
		if !a.JSON() {
			fmt.Fprintf(a.Stderr, "audit: %d tasks checked so far, %d records verified, %d tasks do not verify\n",
				rep.Tasks, rep.Records, len(rep.Failures)+rep.MoreFailures)
		}
		p.Cursor = next
	}
}

// add keeps a broken chain, or returns err when it is not one.
func (rep *verifyReport) add(taskID string, err error) error {
	var ce *ssot.ChainError
	switch {
	case errors.As(err, &ce):
	case errors.Is(err, ssot.ErrNotFound):
		return fmt.Errorf("task %s has no records in the SSOT store", taskID)
	default:
		return fmt.Errorf("verifying task %s: %w", taskID, err)
	}
	if len(rep.Failures) == maxVerifyFailures {
		rep.MoreFailures++
		return nil
	}
	rep.Failures = append(rep.Failures, verifyFailure{TaskID: ce.TaskID, Seq: ce.Seq, ID: ce.ID, Problem: ce.Problem})
	return nil
}

// chainProblem reads as ChainError does: "task T: record #2 (m2): …".
func chainProblem(f verifyFailure) string {
	return (&ssot.ChainError{TaskID: f.TaskID, Seq: f.Seq, ID: f.ID, Problem: f.Problem}).Error()
}

func (a *App) printVerify(rep verifyReport) error {
	if a.JSON() {
		if rep.Failures == nil {
			rep.Failures = []verifyFailure{}
		}
		if rep.Rows == nil {
			rep.Rows = []rowFailure{}
		}
		return a.PrintJSON(rep)
	}
	if rep.OK {
		if rep.Head != nil {
			_, err := fmt.Fprintf(a.Stdout, "task %s verifies: %s; chain head #%d %s\n",
				rep.TaskID, plural(rep.Records, "record"), rep.Head.Seq, rep.Head.Hash)
			return err
		}
		_, err := fmt.Fprintf(a.Stdout, "verified %s, %s: every chain holds%s\n",
			plural(int64(rep.Tasks), "task"), plural(rep.Records, "record"), rowsAgree(rep.RowsChecked))
		return err
	}
	if len(rep.Failures) > 0 {
		if err := a.printChainFailures(rep); err != nil {
			return err
		}
	}
	if len(rep.Rows) == 0 {
		return nil
	}
	t := newTable(a.Stdout, "TABLE", "KEY", "PROBLEM")
	for _, r := range rep.Rows {
		t.row(r.Table, r.Key, r.Problem)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if rep.MoreRows > 0 {
		fmt.Fprintf(a.Stdout, "and %d more rows that disagree\n", rep.MoreRows)
	}
	c := rep.RowsChecked
	_, err := fmt.Fprintf(a.Stdout, "compared %s, %s and %s with their chains: %d disagree\n",
		plural(int64(c.Gates), "gate"), plural(int64(c.Contracts), "contract"), plural(int64(c.Raises), "budget raise"),
		len(rep.Rows)+rep.MoreRows)
	return err
}

// rowsAgree says how many rows were compared with their chains, when any
// were.
func rowsAgree(c *ssot.CrossCheckCounts) string {
	if c == nil || *c == (ssot.CrossCheckCounts{}) {
		return ""
	}
	return fmt.Sprintf("; %s, %s and %s agree with them",
		plural(int64(c.Gates), "gate"), plural(int64(c.Contracts), "contract"), plural(int64(c.Raises), "budget raise"))
}

func (a *App) printChainFailures(rep verifyReport) error {
	t := newTable(a.Stdout, "TASK", "RECORD", "ID", "PROBLEM")
	for _, f := range rep.Failures {
		t.row(f.TaskID, fmt.Sprintf("#%d", f.Seq), f.ID, f.Problem)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if rep.MoreFailures > 0 {
		fmt.Fprintf(a.Stdout, "and %d more tasks that do not verify\n", rep.MoreFailures)
	}
	broken := len(rep.Failures) + rep.MoreFailures
	_, err := fmt.Fprintf(a.Stdout, "checked %s: %d verify (%s), %d do not\n",
		plural(int64(rep.Tasks), "task"), rep.Tasks-broken, plural(rep.Records, "record"), broken)
	return err
}

// plural is "1 record", "2 records".
func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
