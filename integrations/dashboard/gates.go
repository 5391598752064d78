package dashboard

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ampflow/ampflow/activities/ssot"
)

// GateLister reads the action gate's signals and gates (*ssot.DB).
type GateLister interface {
	GateList(ctx context.Context, f ssot.GateFilter, p ssot.Page) ([]ssot.GateRow, string, error)
}

// gatesShown is how many gates the Gates page lists, newest first.
const gatesShown = 200

// GatesPanel fills the Gates page from the store: the newest signals,
// whether each was gated, its cost and where its gate stands.
func GatesPanel(l GateLister) Panel { return gatesPanel{l} }

type gatesPanel struct{ l GateLister }

func (g gatesPanel) Table(ctx context.Context) (Table, error) {
	rows, _, err := g.l.GateList(ctx, ssot.GateFilter{}, ssot.Page{Limit: gatesShown})
	if err != nil {
		return Table{}, fmt.Errorf("listing gates: %w", err)
	}
	t := Table{Columns: []string{"Gate", "Kind", "Agent", "Project", "Task", "Status", "Cost (USD)", "Tokens in/out", "Received", "Resolved by"}}
	for _, r := range rows {
		task := Cell{Text: r.TaskID}
		if r.TaskID != "" {
			task.Href = "/tasks/" + r.TaskID
		}
		status := r.Status
		if !r.Gated {
			status += " (not gated)"
		}
		cost := strconv.FormatFloat(r.CostUSD, 'f', 4, 64)
		if r.Mismatch {
			cost += fmt.Sprintf(" (reported %s)", strconv.FormatFloat(r.ReportedUSD, 'f', 4, 64))
		}
		resolved := r.ResolvedBy
		if resolved == "" && !r.ResolvedAt.IsZero() {
			resolved = "–"
		}
		t.Rows = append(t.Rows, []Cell{
			{Text: r.GateID}, {Text: r.Kind}, {Text: r.AgentID}, {Text: r.ProjectID}, task, {Text: status},
			{Text: cost}, {Text: fmt.Sprintf("%d / %d", r.InputTokens, r.OutputTokens)}, {Time: r.ReceivedAt}, {Text: resolved},
		})
	}
	return t, nil
}
