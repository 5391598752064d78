package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/chat"
	"github.com/spf13/cobra"
)

// decisionChannel is how the CLI names itself in a decision's outcome.
const decisionChannel = "cli"

// shortDigest is how many hex characters of a digest the tables show;
// --digest takes the whole digest, as -o json prints it.
const shortDigest = 12

func (a *App) pendingCommand() *cobra.Command {
	var page pageFlags
	cmd := &cobra.Command{
		Use:     "pending",
		Short:   "List the decisions waiting for an admin",
		GroupID: groupAdmin,
		Long: "Pending lists the open decisions of every workflow: the subject (the task or\n" +
			"other workflow that asks), the decision id, its kind, the approvals given of\n" +
			"those required (\"1 of 2\"), when it expires (and then takes its on_expiry\n" +
			"option, never an approval), the start of its digest, the question and the\n" +
			"options (* marks those that need --note). Under the table, each tool_call\n" +
			"decision shows the tool, its directory, the rule that asked and the command\n" +
			"or the file and its diff. -o json prints an array of whole\n" +
			"decisions, with the full digest, expires_at and approvals; [] when none is\n" +
			"open. Oldest first.\n" + pageHelp,
		Example: "  ampflow pending\n" +
			"  ampflow pending --all -o json | jq -r '.[] | \"\\(.id) \\(.digest)\"'",
		Args: exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := page.check(); err != nil {
				return err
			}
			tasks, err := a.tasks()
			if err != nil {
				return err
			}
			ds, next, err := readPages(cmd.Context(), page, func(ctx context.Context, q pageQuery) ([]decision.Decision, string, error) {
				if p, ok := tasks.(pager); ok {
					return p.DecisionsPage(ctx, q)
				}
				ds, err := tasks.Pending(ctx)
				return ds, "", err
			})
			if err != nil {
				return refused(err)
			}
			if done, err := a.printPage(cmd, args, ds, len(ds), next, "no pending decisions"); done {
				return err
			}
			now := a.Now()
			t := newTable(a.Stdout, "SUBJECT", "DECISION", "KIND", "APPROVALS", "EXPIRES", "DIGEST", "PROMPT", "OPTIONS")
			for _, d := range ds {
				t.row(d.Subject, d.ID, string(d.Kind), approvals(d), expiresIn(d.ExpiresAt, now), clip(d.Digest, shortDigest),
					clip(chat.Prompt(d), 50), optionList(d))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if needsNote(ds...) {
				if _, err := fmt.Fprintln(a.Stdout, "* needs --note"); err != nil {
					return err
				}
			}
			if err := printToolCalls(a.Stdout, ds); err != nil {
				return err
			}
			return a.printMore(cmd, args, next)
		},
	}
	page.add(cmd, "decisions")
	return cmd
}

// approvals reads "1 of 2": approvals given of those required.
func approvals(d decision.Decision) string {
	p := d.Progress()
	return fmt.Sprintf("%d of %d", p.Given, p.Required)
}

// expiresIn says when a decision expires, from now: "in 3h05m", "never",
// or "due" once the time has passed and the workflow has yet to apply it.
func expiresIn(at, now time.Time) string {
	if at.IsZero() {
		return "never"
	}
	d := at.Sub(now).Round(time.Minute)
	if d <= 0 {
		return "due"
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h >= 48:
		return fmt.Sprintf("in %dd%dh", h/24, h%24)
	case h > 0 && m == 0:
		return fmt.Sprintf("in %dh", h)
	case h > 0:
		return fmt.Sprintf("in %dh%02dm", h, m)
	}
	return fmt.Sprintf("in %dm", m)
}

// decideFlags are the flags of ampflow decide.
type decideFlags struct {
	option, note, decisionID, digest string
}

func (a *App) decideCommand() *cobra.Command {
	var fl decideFlags
	cmd := &cobra.Command{
		Use:     "decide [TASK_ID] [--decision ID] --option OPTION",
		Short:   "Answer a pending decision",
		GroupID: groupAdmin,
		Long: "Decide answers a pending decision, as the chat buttons do. It reads the\n" +
			"decision it answers, the task's pending one or the one --decision names, and\n" +
			"sends that decision's digest: the answer counts only for what was read, and\n" +
			"is refused (stale_decision, exit 1) when what is being approved has changed\n" +
			"since. --decision pins the decision and --digest pins the digest, so an answer\n" +
			"made from an older listing (ampflow pending -o json) cannot land on a newer\n" +
			"question. Without TASK_ID, --decision is required and names any open\n" +
			"decision of any workflow: a gate's, an AOF task's, a contract's (given such a\n" +
			"subject as the argument, decide names the --decision that answers it).\n\n" +
			"A decision is answered once; a second answer, here or in chat, is refused\n" +
			"(decided) with who answered, where and when. Where a quorum of admins must\n" +
			"approve, an approval short of it leaves the decision open and prints the\n" +
			"progress (\"1 of 2 approvals: ana\").\n\n" +
			"The decider is the API token's name (api.token), which needs the admin role;\n" +
			"an API without tokens (ampflow dev) decides as its own admin, the\n" +
			"operating-system user it runs as.",
		Example: "  ampflow decide T-2026-045 --option approve\n" +
			"  ampflow decide T-2026-045 --decision T-2026-045-d1 --option reject --note \"too broad\"\n" +
			"  ampflow decide --decision T-2026-045-d1 --digest 9f86d081884c7d65…(64 hex) --option approve",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return exactArgs(1, "TASK_ID")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && !task.ValidID(args[0]) {
				return a.notATask(cmd.Context(), args[0], fl)
			}
			return a.decide(cmd, args, fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.option, "option", "", "the chosen `OPTION` id (see ampflow pending)")
	f.StringVar(&fl.note, "note", "", "a note; some options require one")
	f.StringVar(&fl.decisionID, "decision", "", "answer decision `ID` only, refused unless it is still open")
	f.StringVar(&fl.digest, "digest", "", "answer only if the decision's digest is still `HEX` (64 hex characters)")
	return cmd
}

// decide answers the decision ampflow decide names.
func (a *App) decide(cmd *cobra.Command, args []string, fl decideFlags) error {
	if fl.option == "" {
		return UsageError(errors.New("decide needs --option"))
	}
	if len(args) == 0 && fl.decisionID == "" {
		return UsageError(errors.New("decide needs TASK_ID or --decision ID"))
	}
	if fl.digest != "" && (len(fl.digest) != 64 || strings.Trim(strings.ToLower(fl.digest), "0123456789abcdef") != "") {
		return UsageError(fmt.Errorf("--digest: %q is not a digest: 64 hex characters, as ampflow pending -o json prints it", fl.digest))
	}
	tasks, err := a.tasks()
	if err != nil {
		return err
	}
	var d *decision.Decision
	if len(args) == 1 {
		d, err = a.taskDecision(cmd.Context(), args[0], fl.decisionID)
	} else {
		d, err = a.openDecision(cmd.Context(), fl.decisionID)
		if task.ErrorCode(err) == task.CodeNotFound && fl.digest != "" {
			// Pinned to a decision no longer open: the server says
			// whether it was answered, by whom and when.
			d = &decision.Decision{ID: fl.decisionID, Digest: strings.ToLower(fl.digest), Options: []decision.Option{{ID: fl.option}}}
			err = nil
		}
	}
	if err != nil {
		return err
	}
	if fl.digest != "" && !strings.EqualFold(fl.digest, d.Digest) {
		return Exit(ExitFailed, &task.Error{Code: task.CodeStaleDecision, Message: fmt.Sprintf(
			"digest: decision %s (%s of %s) has changed since it was read: its digest is now %s, not %s; nothing was decided. Read it again with 'ampflow pending' and answer what it asks now",
			d.ID, d.Kind, d.Subject, clip(d.Digest, shortDigest), clip(fl.digest, shortDigest)),
			Fields: []amp.FieldError{{Path: "digest", Problem: "is not the decision's digest"}}})
	}
	opt, ok := d.Option(fl.option)
	if !ok {
		return Exit(ExitFailed, fmt.Errorf("option: %q is not an option of decision %s; choose %s", fl.option, d.ID, strings.ReplaceAll(optionChoices(*d), "|", ", ")))
	}
	if opt.NoteRequired && strings.TrimSpace(fl.note) == "" {
		return Exit(ExitFailed, fmt.Errorf("note: option %s of decision %s needs --note", fl.option, d.ID))
	}
	res, err := tasks.Decide(cmd.Context(), d.Subject, decision.Answer{
		DecisionID: d.ID, Option: fl.option, Note: fl.note, Digest: d.Digest, Channel: decisionChannel,
	})
	if err != nil {
		return refused(err)
	}
	if a.JSON() {
		return a.PrintJSON(res)
	}
	if res.Open() {
		p := res.Decision.Progress()
		if res.Progress != nil {
			p = *res.Progress
		}
		_, err = fmt.Fprintf(a.Stdout, "approval counted on %s (%s) of %s: %s; still open; status %s\n",
			d.ID, d.Kind, d.Subject, p, res.Status)
		return err
	}
	_, err = fmt.Fprintf(a.Stdout, "decided %s (%s) on %s: %s by %s; status %s\n",
		d.ID, d.Kind, d.Subject, res.Outcome.Option, res.Outcome.By, res.Status)
	return err
}

// notATask answers ampflow decide SUBJECT for a subject that is not an
// AMP task (a gate, an AOF task, a contract's gate): such decisions are
// named with --decision, and the open ones of that subject are suggested.
func (a *App) notATask(ctx context.Context, subject string, fl decideFlags) error {
	option := fl.option
	if option == "" {
		option = "OPTION"
	}
	var ids []string
	if tasks, err := a.tasks(); err == nil {
		if ds, err := tasks.Pending(ctx); err == nil {
			for _, d := range ds {
				if d.Subject == subject || d.ID == subject {
					if fl.option == "" {
						option = optionChoices(d)
					}
					ids = append(ids, d.ID)
				}
			}
		}
	}
	if len(ids) == 0 {
		return UsageError(fmt.Errorf("%q is not a task id T-YYYY-NNN; to answer a decision of a gate, an AOF task or a contract, name the decision: ampflow decide --decision ID --option %s ('ampflow pending' lists the open decisions and their ids)", subject, option))
	}
	cmds := make([]string, len(ids))
	for i, id := range ids {
		cmds[i] = fmt.Sprintf("ampflow decide --decision %s --option %s", id, option)
	}
	return UsageError(fmt.Errorf("%q is not a task id T-YYYY-NNN; it is the subject of %s: answer with %s", subject,
		plural(int64(len(ids)), "open decision"), strings.Join(cmds, ", or ")))
}

// taskDecision reads the pending decision of a task; a decisionID that
// is not it is refused as stale.
func (a *App) taskDecision(ctx context.Context, taskID, decisionID string) (*decision.Decision, error) {
	tasks, err := a.tasks()
	if err != nil {
		return nil, err
	}
	st, err := tasks.State(ctx, taskID)
	if err != nil {
		return nil, refused(err)
	}
	d := st.Pending
	switch {
	case d == nil:
		return nil, Exit(ExitFailed, fmt.Errorf("task %s has no pending decision (status %s)", taskID, st.Status))
	case decisionID != "" && decisionID != d.ID:
		return nil, Exit(ExitFailed, &task.Error{Code: task.CodeStaleDecision, Message: fmt.Sprintf(
			"decision: %s is not the pending decision of task %s; pending now is %s (%s): read it with 'ampflow task show %s'",
			decisionID, taskID, d.ID, d.Kind, taskID),
			Fields: []amp.FieldError{{Path: "decision", Problem: "is not the pending decision"}}})
	}
	return d, nil
}

// openDecision finds an open decision of any workflow by its id.
func (a *App) openDecision(ctx context.Context, id string) (*decision.Decision, error) {
	tasks, err := a.tasks()
	if err != nil {
		return nil, err
	}
	ds, err := tasks.Pending(ctx)
	if err != nil {
		return nil, refused(err)
	}
	for _, d := range ds {
		if d.ID == id {
			return &d, nil
		}
	}
	return nil, Exit(ExitFailed, &task.Error{Code: task.CodeNotFound, Message: fmt.Sprintf(
		"decision: %s is not open (answered, withdrawn, expired or unknown); 'ampflow pending' lists the open ones", id)})
}
