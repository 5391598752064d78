package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// table writes aligned columns.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = oneLine(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// oneLine keeps a cell on its line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	s = oneLine(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// stamp formats a time for tables: UTC, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// subtaskProgress reads "i/n" from a state, "-" before the first.
func subtaskProgress(st task.State) string {
	n := len(st.Subtasks)
	switch {
	case n == 0:
		return "-"
	case st.Subtask != nil:
		return fmt.Sprintf("%d/%d", st.SubtaskIndex+1, n)
	case st.SubtaskIndex >= n:
		return fmt.Sprintf("%d/%d", n, n)
	}
	return fmt.Sprintf("0/%d", n)
}

// optionList names a decision's options; those needing a note carry *.
func optionList(d decision.Decision) string {
	ids := make([]string, len(d.Options))
	for i, o := range d.Options {
		ids[i] = o.ID
		if o.NoteRequired {
			ids[i] += "*"
		}
	}
	return strings.Join(ids, ", ")
}

// optionChoices is a decision's option ids as "a|b|c".
func optionChoices(d decision.Decision) string {
	ids := make([]string, len(d.Options))
	for i, o := range d.Options {
		ids[i] = o.ID
	}
	return strings.Join(ids, "|")
}

func needsNote(ds ...decision.Decision) bool {
	for _, d := range ds {
		for _, o := range d.Options {
			if o.NoteRequired {
				return true
			}
		}
	}
	return false
}

// timelineLine describes one timeline entry.
func timelineLine(e task.TimelineEntry) string {
	var parts []string
	switch e.Kind {
	case "message":
		parts = append(parts, e.Type, e.From+" → "+e.To, e.MsgID)
	case "ack":
		parts = append(parts, "by "+e.From, "of "+e.MsgID)
	case "status":
		parts = append(parts, string(e.Status))
	default:
		if e.Type != "" {
			parts = append(parts, e.Type)
		}
		if e.From != "" {
			parts = append(parts, "by "+e.From)
		}
		if e.MsgID != "" {
			parts = append(parts, e.MsgID)
		}
		if e.Status != "" {
			parts = append(parts, string(e.Status))
		}
	}
	if e.Note != "" {
		parts = append(parts, "("+e.Note+")")
	}
	return strings.Join(parts, " ")
}

// costLine is a task's spend: "$0.0123 (1200 input, 300 output tokens;
// executor $0.0100 of a $5.00 cap, reviewer $0.0023)".
func costLine(st task.State) string {
	line := fmt.Sprintf("$%.4f (%d input, %d output tokens", st.CostUSD, st.Tokens.Input, st.Tokens.Output)
	var roles []string
	for _, s := range st.Spend {
		r := fmt.Sprintf("%s $%.4f", s.Role, s.CostUSD)
		if s.CapUSD > 0 {
			r += fmt.Sprintf(" of a $%.2f cap", s.CapUSD)
		}
		roles = append(roles, r)
	}
	if len(roles) > 0 {
		line += "; " + strings.Join(roles, ", ")
	}
	return line + ")"
}

// printState writes what task show prints.
// statusLine is a task's status with what it waits for: "awaiting_admin
// (waiting for tool_call; in_progress)", or the run it recovers.
func statusLine(st task.State) string {
	s := string(st.Status)
	switch {
	case st.WaitingFor != "" && st.UnderlyingStatus != "":
		s += fmt.Sprintf(" (waiting for %s; %s)", st.WaitingFor, st.UnderlyingStatus)
	case st.WaitingFor != "":
		s += fmt.Sprintf(" (waiting for %s)", st.WaitingFor)
	case st.Recovering != nil && st.UnderlyingStatus != "":
		s += fmt.Sprintf(" (the %s's run on %s died at %s and is delivered again; %s)",
			st.Recovering.Role, st.Recovering.MsgID, st.Recovering.Since.UTC().Format("15:04:05"), st.UnderlyingStatus)
	}
	return s
}

func printState(w io.Writer, st task.State) error {
	kv := newTable(w)
	kv.row("Task", st.TaskID)
	kv.row("Status", statusLine(st))
	kv.row("Risk", orDash(string(st.Risk)))
	kv.row("Repo", st.Repo+" @ "+st.Branch)
	if o := st.Origin; o != nil {
		kv.row("From", strings.TrimSpace(o.Source+" "+o.ExternalID+" "+o.URL))
	}
	switch {
	case st.Lease != nil:
		kv.row("Lease", st.Lease.LeaseID+" on "+st.Lease.ResourceKey+", until "+stamp(st.Lease.ExpiresAt))
	case st.LeaseHolder != "":
		kv.row("Lease", "waiting: "+st.LeaseHolder+" holds the branch")
	}
	for _, h := range st.Holders {
		state := "answered"
		if h.Unanswered != nil {
			state = "working"
		}
		kv.row("Held by", fmt.Sprintf("%s (%s, %s), took %s at %s", h.Agent, h.Role, state, h.MsgID, stamp(h.Since)))
	}
	if st.PullRequest != "" {
		pr := st.PullRequest
		if st.MergeCommit != "" {
			pr += " (merged as " + st.MergeCommit + ")"
		}
		kv.row("Pull request", pr)
	}
	kv.row("Description", clip(st.Description, 100))
	sub := subtaskProgress(st)
	if st.Subtask != nil {
		sub += " " + st.Subtask.SubtaskID + ": " + clip(st.Subtask.Description, 80)
	}
	kv.row("Subtask", sub)
	kv.row("Rejects", fmt.Sprint(st.RejectCount))
	kv.row("CI", ciLine(st))
	kv.row("CI rounds", fmt.Sprint(st.CIRounds))
	kv.row("Rounds", fmt.Sprint(st.Rounds))
	if st.CostUSD > 0 || st.Tokens != (task.Tokens{}) {
		kv.row("Cost", costLine(st))
	}
	if !st.PausedUntil.IsZero() {
		kv.row("Paused", "rate-limited; delivering again at "+stamp(st.PausedUntil))
	}
	kv.row("Started", stamp(st.StartedAt))
	kv.row("Updated", stamp(st.UpdatedAt))
	if st.LastError != "" {
		kv.row("Last error", st.LastError)
	}
	if st.Reason != "" {
		kv.row("Reason", st.Reason)
	}
	if err := kv.flush(); err != nil {
		return err
	}
	if d := st.Pending; d != nil {
		fmt.Fprintf(w, "\nPending decision %s (%s), raised %s\n  %s\n", d.ID, d.Kind, stamp(d.RaisedAt), oneLine(d.Prompt))
		if e := d.Context.AgentStderr; e != "" {
			fmt.Fprintf(w, "  the agent's stderr ended with:\n    %s\n", strings.ReplaceAll(e, "\n", "\n    "))
		}
		for _, o := range d.Options {
			note := ""
			if o.NoteRequired {
				note = "  (needs --note)"
			}
			fmt.Fprintf(w, "  - %s: %s%s\n", o.ID, o.Label, note)
		}
		fmt.Fprintf(w, "  decide with: ampflow decide %s --decision %s --option OPTION\n", st.TaskID, d.ID)
	}
	fmt.Fprintf(w, "\nTimeline (%d)\n", len(st.Timeline))
	tl := newTable(w)
	for _, e := range st.Timeline {
		tl.row("  "+stamp(e.At), e.Kind, timelineLine(e))
	}
	return tl.flush()
}

// readableDuration is a slog ReplaceAttr that writes durations as
// task.FormatDuration does.
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(task.FormatDuration(a.Value.Duration()))
	}
	return a
}
