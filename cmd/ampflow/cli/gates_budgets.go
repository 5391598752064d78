package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/integrations/runshift"
)

// gatesBudgetsCommand is `ampflow gates budgets`: pricing.budgets with this
// period's spend, and `ampflow gates budgets raise`.
func (a *App) gatesBudgetsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budgets",
		Short: "List pricing.budgets with this period's spend; raise one",
		Long: "Budgets lists each budget of pricing.budgets for the current UTC day or month: its\n" +
			"key, the configured amount, what admins raised it by for the period, the spend\n" +
			"and its state (ok; warn: every signal is gated; exhausted: signals are refused\n" +
			"with 402 budget_exceeded). `budgets raise` lifts a spent budget for the period.",
		Example: "  ampflow gates budgets\n  ampflow gates budgets raise 'deployer:*:day' 5 --note 'release day'",
		Args:    exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var out runshift.BudgetList
			if err := c.do(cmd.Context(), http.MethodGet, "/v1/budgets", nil, nil, &out); err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(out.Budgets)
			}
			if len(out.Budgets) == 0 {
				_, err := fmt.Fprintln(a.Stdout, "no budgets (pricing.budgets)")
				return err
			}
			t := newTable(a.Stdout, "KEY", "PERIOD", "BUDGET", "RAISED", "SPENT", "SIGNALS", "STATE")
			for _, b := range out.Budgets {
				t.row(b.Key, b.PeriodOf, usd(b.USD), usd(b.RaisedUSD), usd(b.SpentUSD), strconv.FormatInt(b.Signals, 10), b.State)
			}
			return t.flush()
		},
	}
	cmd.AddCommand(a.gatesRaiseCommand())
	return cmd
}

func (a *App) gatesRaiseCommand() *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   "raise KEY AMOUNT_USD",
		Short: "Raise a budget for its current day or month (admins)",
		Long: "Raise adds AMOUNT_USD to the budget KEY (as `ampflow gates budgets` shows it) for\n" +
			"the current UTC day or month only; signals refused with 402 are taken again\n" +
			"until the raised budget is spent. The raise is kept in the SSOT with your name.",
		Example: "  ampflow gates budgets raise 'deployer:*:day' 5 --note 'release day'",
		Args:    exactArgs(2, "KEY AMOUNT_USD"),
		RunE: func(cmd *cobra.Command, args []string) error {
			amount, err := strconv.ParseFloat(args[1], 64)
			if err != nil || amount <= 0 {
				return UsageError(fmt.Errorf("AMOUNT_USD %q: must be a number above 0", args[1]))
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			var out runshift.RaiseReply
			err = c.do(cmd.Context(), http.MethodPost, "/v1/budgets/"+url.PathEscape(args[0])+"/raise", nil,
				runshift.RaiseRequest{AmountUSD: amount, Note: note}, &out)
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(out)
			}
			b := out.Budget
			_, err = fmt.Fprintf(a.Stdout, "raised %s by %s for %s: %s of %s spent (%s)\n", b.Key, usd(amount), b.PeriodOf,
				usd(b.SpentUSD), usd(b.LimitUSD), b.State)
			return err
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why, for the record")
	return cmd
}

func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 4, 64) }
