package dashboard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PanelRunners fills the top of the Agents page: the runner agents, the
// agent CLIs ampflow's workers run for a role (agents.<role>.mode: runner).
const PanelRunners = "runners"

// RunnerRole is a role whose agent is a runner, as this worker's
// configuration names it.
type RunnerRole struct {
	Role, Runner, Model string
	// Accounts names the role's accounts (agents.<role>.accounts).
	Accounts []string
}

// RunnerRun is one agent CLI run on a host of the fleet, or one waiting
// for its host's slot (Started zero).
type RunnerRun struct {
	Host, TaskID, Role, Runner, Step string
	// Account is the runner's account the run uses; empty without.
	Account         string
	Queued, Started time.Time
	CostUSD         float64
	// Priority is the task's (plan.priority), which orders the queue.
	Priority int
}

// Fleet lists the runs of the fleet's live hosts (GET /v1/fleet's).
type Fleet interface {
	Runs(ctx context.Context) ([]RunnerRun, error)
}

// RunnerSpender reads what each role's runs spent since a time, from the
// running cost on their transcripts (*ssot.DB).
type RunnerSpender interface {
	RunnerSpendSince(ctx context.Context, since time.Time) (map[string]float64, error)
}

// AccountSpend is what one runner account spent today (UTC).
type AccountSpend struct {
	Role, Account string
	USD           float64
}

// AccountSpender reads what this worker's runs spent today on each
// runner account.
type AccountSpender interface {
	AccountSpendToday() []AccountSpend
}

// RunnersPanel lists each runner role: busy with a task (its step, its
// account, for how long, on which host) or idle, and what its runs spent
// since midnight UTC, with this worker's spend by account. A role
// another worker runs (seen in the fleet) is listed too. spend and
// accounts may be nil.
func RunnersPanel(roles []RunnerRole, fleet Fleet, spend RunnerSpender, accounts AccountSpender, now func() time.Time) Panel {
	if now == nil {
		now = time.Now
	}
	return runnersPanel{roles, fleet, spend, accounts, now}
}

type runnersPanel struct {
	roles    []RunnerRole
	fleet    Fleet
	spend    RunnerSpender
	accounts AccountSpender
	now      func() time.Time
}

func (p runnersPanel) Table(ctx context.Context) (Table, error) {
	now := p.now()
	var runs []RunnerRun
	if p.fleet != nil {
		var err error
		if runs, err = p.fleet.Runs(ctx); err != nil {
			return Table{}, fmt.Errorf("reading the fleet: %w", err)
		}
	}
	spent := map[string]float64{}
	if p.spend != nil {
		y, m, d := now.UTC().Date()
		var err error
		if spent, err = p.spend.RunnerSpendSince(ctx, time.Date(y, m, d, 0, 0, 0, 0, time.UTC)); err != nil {
			return Table{}, fmt.Errorf("reading the runners' spend: %w", err)
		}
	}
	var byAccount []AccountSpend
	if p.accounts != nil {
		byAccount = p.accounts.AccountSpendToday()
	}
	roles := slices.Clone(p.roles)
	for _, r := range runs {
		if !slices.ContainsFunc(roles, func(x RunnerRole) bool { return x.Role == r.Role }) {
			roles = append(roles, RunnerRole{Role: r.Role, Runner: r.Runner})
		}
	}
	slices.SortStableFunc(roles, func(a, b RunnerRole) int { return roleOrder(a.Role) - roleOrder(b.Role) })
	t := Table{Columns: []string{"Agent", "CLI", "Account", "State", "Task", "Step", "For", "Host", "Spent today"}}
	for _, role := range roles {
		cli := role.Runner
		if role.Model != "" {
			cli += " · " + role.Model
		}
		today := Cell{Text: fmt.Sprintf("$%.4f", spent[role.Role])}
		var accs []string
		for _, a := range byAccount {
			if a.Role == role.Role {
				accs = append(accs, fmt.Sprintf("%s $%.4f", a.Account, a.USD))
			}
		}
		if len(accs) > 0 {
			today.Text += " (on this worker: " + strings.Join(accs, ", ") + ")"
		}
		var mine []RunnerRun
		for _, r := range runs {
			if r.Role == role.Role {
				mine = append(mine, r)
			}
		}
		// Running first, then waiting for a slot, each oldest first.
		slices.SortStableFunc(mine, func(a, b RunnerRun) int {
			if a.Started.IsZero() != b.Started.IsZero() {
				if a.Started.IsZero() {
					return 1
				}
				return -1
			}
			return a.Queued.Compare(b.Queued)
		})
		if len(mine) == 0 {
			t.Rows = append(t.Rows, []Cell{{Text: role.Role}, {Text: orDash(cli)}, {Text: orDash(strings.Join(role.Accounts, ", "))}, {Text: "idle"},
				{Text: "–"}, {Text: "–"}, {Text: "–"}, {Text: "–"}, today})
			continue
		}
		for _, r := range mine {
			state, since := "busy", r.Started
			if r.Started.IsZero() {
				state, since = "waiting for a slot", r.Queued
			}
			if cli == "" {
				cli = r.Runner
			}
			step := r.Step
			if r.CostUSD > 0 {
				step = fmt.Sprintf("%s (run $%.4f)", orDash(step), r.CostUSD)
			}
			t.Rows = append(t.Rows, []Cell{{Text: role.Role}, {Text: orDash(cli)}, {Text: orDash(r.Account)}, {Text: state}, {Text: r.TaskID, Href: "/tasks/" + r.TaskID},
				{Text: orDash(step)}, {Text: now.Sub(since).Round(time.Second).String()}, {Text: r.Host}, today})
		}
	}
	return t, nil
}

// roleOrder lists the executor first, then the reviewer, then the rest.
func roleOrder(role string) int {
	switch role {
	case "executor":
		return 0
	case "reviewer":
		return 1
	}
	return 2
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
