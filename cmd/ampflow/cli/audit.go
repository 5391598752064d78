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
		Short: "Verify the hash chains of every task, or of one",
		Long: "Verify walks each task's chain of records in the SSOT store (or TASK_ID's) and\n" +
			"recomputes every link: the hash of each record's body, and of its fields and\n" +
			"the record before it, up to the chain head the store keeps. A row edited,\n" +
			"deleted or inserted in the database behind ampflow's back breaks the chain there.\n\n" +
			"Exit 0: every chain verifies; a summary is printed (tasks, records verified).\n" +
			"Exit 1: a chain does not verify, the store cannot be read, or TASK_ID has no\n" +
			"records; the first record that does not verify is named for each broken task\n" +
			"(up to 100), and the error names the first of them. Progress goes to stderr\n" +
			"every 1,000 tasks. -o json prints {ok, tasks, records, head, failures}.\n" + storeHelp,
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
			var rep verifyReport
			if len(args) == 1 {
				err = a.verifyOne(cmd.Context(), db, args[0], &rep)
			} else {
				err = a.verifyAll(cmd.Context(), db, &rep)
			}
			if err != nil {
				return err
			}
			rep.OK = len(rep.Failures) == 0
			if err := a.printVerify(rep); err != nil {
				return err
			}
			if !rep.OK {
				f := rep.Failures[0]
				msg := fmt.Sprintf("audit failed: %s", chainProblem(f))
				if n := len(rep.Failures) + rep.MoreFailures; n > 1 {
					msg += fmt.Sprintf(" (%d tasks do not verify)", n)
				}
				return Exit(ExitFailed, errors.New(msg))
			}
			return nil
		},
	}
	sf.add(verify)
	audit.AddCommand(verify)
	return audit
}

func (a *App) verifyOne(ctx context.Context, db ssot.Store, taskID string, rep *verifyReport) error {
	head, err := db.Verify(ctx, taskID)
	rep.Tasks, rep.TaskID = 1, taskID
	if err != nil {
		return rep.add(taskID, err)
	}
	rep.Records, rep.Head = head.Seq, &head
	return nil
}

func (a *App) verifyAll(ctx context.Context, db ssot.Store, rep *verifyReport) error {
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
		return a.PrintJSON(rep)
	}
	if rep.OK {
		if rep.Head != nil {
			_, err := fmt.Fprintf(a.Stdout, "task %s verifies: %s; chain head #%d %s\n",
				rep.TaskID, plural(rep.Records, "record"), rep.Head.Seq, rep.Head.Hash)
			return err
		}
		_, err := fmt.Fprintf(a.Stdout, "verified %s, %s: every chain holds\n",
			plural(int64(rep.Tasks), "task"), plural(rep.Records, "record"))
		return err
	}
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
