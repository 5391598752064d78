package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// defaultPageLimit is the API's page size when a listing names none.
const defaultPageLimit = 100

// pageQuery asks one listing request for a page: at most Limit items,
// after Cursor (a next_cursor the API gave; empty is the first page).
type pageQuery struct {
	Limit  int
	Cursor string
	// Mine asks the inbox for the messages the caller's token ACKed and
	// has not answered, alone (GET /v1/inbox?mine=true).
	Mine bool
	// Source asks the task listing for the tasks started from that
	// tracker's items alone (GET /v1/tasks?source=).
	Source string
}

// pager is a way in that reads listings a page at a time, as the HTTP API
// does. Without it (a test's fake) a listing is read whole.
type pager interface {
	TasksPage(ctx context.Context, status task.Status, p pageQuery) ([]workflows.TaskSummary, string, error)
	DecisionsPage(ctx context.Context, p pageQuery) ([]decision.Decision, string, error)
	InboxPage(ctx context.Context, role amp.Role, wait time.Duration, p pageQuery) ([]amp.Message, string, error)
}

var _ pager = (*apiClient)(nil)

// pageFlags are the --limit, --cursor and --all of a listing command.
type pageFlags struct {
	limit  int
	cursor string
	all    bool
}

// add declares the flags on cmd; what names the items ("tasks").
func (p *pageFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().IntVar(&p.limit, "limit", defaultPageLimit,
		fmt.Sprintf("at most `N` %s a page, from 1 to %d; 0 is %d", what, maxListLimit, maxListLimit))
	cmd.Flags().StringVar(&p.cursor, "cursor", "", "go on from the `CURSOR` a previous page printed (its more: line)")
	cmd.Flags().BoolVar(&p.all, "all", false, "read every page, --limit "+what+" per request, to the end")
}

// pageHelp is the part of a listing's long help about pages.
const pageHelp = "A listing shows one page, --limit items (100 unless set). When more remain,\n" +
	"a line on stderr says how to go on: \"more: ampflow … --cursor C\", or with\n" +
	"-o json {\"next_cursor\":\"C\"} (stdout stays one JSON array). --all reads\n" +
	"every page to the end."

// check refuses flags that do not go together.
func (p *pageFlags) check() error {
	if p.all && p.cursor != "" {
		return UsageError(errors.New("--all reads from the first page; it cannot be given with --cursor"))
	}
	if p.limit < 0 || p.limit > maxListLimit {
		return UsageError(fmt.Errorf("--limit %d: must be from 1 to %d", p.limit, maxListLimit))
	}
	if p.limit == 0 {
		p.limit = maxListLimit
	}
	return nil
}

// readPages reads the page p asks for, or with --all every page from
// there to the end, and returns the items with the cursor of the page
// after them (empty when none remain).
func readPages[T any](ctx context.Context, p pageFlags, fetch func(context.Context, pageQuery) ([]T, string, error)) ([]T, string, error) {
	q := pageQuery{Limit: p.limit, Cursor: p.cursor}
	out := []T{}
	for {
		items, next, err := fetch(ctx, q)
		if err != nil {
			return nil, "", err
		}
		out = append(out, items...)
		if !p.all || next == "" {
			return out, next, nil
		}
		if next == q.Cursor {
			return nil, "", fmt.Errorf("reading pages: the API gave the same cursor %s twice", next)
		}
		q.Cursor = next
	}
}

// printMore tells, on stderr, how to read the page after this one: in
// text, the same command line with --cursor; with -o json, one line
// {"next_cursor": …}, so stdout stays a JSON array.
// printPage prints a page of n items under -o json (then its next
// cursor), or none when the page is empty and none is set; done says it
// printed, and the caller prints its table otherwise.
func (a *App) printPage(cmd *cobra.Command, args []string, list any, n int, next, none string) (done bool, err error) {
	if a.JSON() {
		if err := a.PrintJSON(list); err != nil {
			return true, err
		}
		return true, a.printMore(cmd, args, next)
	}
	if n == 0 && none != "" {
		_, err := fmt.Fprintln(a.Stdout, none)
		return true, err
	}
	return false, nil
}

func (a *App) printMore(cmd *cobra.Command, args []string, next string) error {
	if next == "" {
		return nil
	}
	if a.JSON() {
		enc := json.NewEncoder(a.Stderr)
		enc.SetEscapeHTML(false)
		return enc.Encode(map[string]string{"next_cursor": next})
	}
	line := []string{cmd.CommandPath()}
	for _, arg := range args {
		line = append(line, shellWord(arg))
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch {
		case f.Name == "cursor" || f.Name == "all":
		case f.Value.Type() == "bool":
			line = append(line, "--"+f.Name+"="+f.Value.String())
		default:
			line = append(line, "--"+f.Name, shellWord(f.Value.String()))
		}
	})
	_, err := fmt.Fprintf(a.Stderr, "more: %s --cursor %s\n", strings.Join(line, " "), next)
	return err
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
