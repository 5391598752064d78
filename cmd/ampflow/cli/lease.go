package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/integrations/repomesh"
)

func (a *App) leaseCommand() *cobra.Command {
	lease := &cobra.Command{
		Use:   "lease",
		Short: "Acquire, renew, release and list leases on resources",
		Long: "A lease holds a resource key (repo:app:main, task:T-2026-001, any string up to\n" +
			"200 bytes) for one agent at a time. It is released when its holder releases it,\n" +
			"by an admin, or on its own at last_heartbeat + ttl: renew it before then.\n" +
			"Agents act only as themselves (the token's name) unless admin.",
		GroupID: groupAgent,
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	lease.AddCommand(a.leaseAcquireCommand(), a.leaseRenewCommand(), a.leaseReleaseCommand(), a.leaseListCommand())
	return lease
}

func (a *App) leaseAcquireCommand() *cobra.Command {
	var agent string
	var ttl int
	acquire := &cobra.Command{
		Use:   "acquire RESOURCE_KEY",
		Short: "Take a lease (exit 1 with LOCK_CONFLICT naming the holder when held)",
		Example: "  ampflow lease acquire repo:app:main --ttl 300\n" +
			"  ampflow lease acquire task:T-2026-001 --agent qwen-assistant -o json",
		Args: exactArgs(1, "RESOURCE_KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var l repomesh.Lease
			body := repomesh.AcquireRequest{ResourceKey: args[0], AgentID: agent, TTLSeconds: ttl}
			if err := c.do(cmd.Context(), http.MethodPost, "/v1/leases", nil, body, &l); err != nil {
				return err
			}
			return a.printLeases(l)
		},
	}
	acquire.Flags().StringVar(&agent, "agent", "", "the `AGENT_ID` to hold it (default: the token's name)")
	acquire.Flags().IntVar(&ttl, "ttl", 300, "time to live in `SECONDS` (1 to 86400)")
	return acquire
}

func (a *App) leaseRenewCommand() *cobra.Command {
	var agent string
	var renewTTL int
	renew := &cobra.Command{
		Use:     "renew LEASE_ID",
		Short:   "Renew a lease you hold (its heartbeat)",
		Example: "  ampflow lease renew Lc0ffee.cmVwbzphcHA6bWFpbg --ttl 300",
		Args:    exactArgs(1, "LEASE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var l repomesh.Lease
			if err := c.do(cmd.Context(), http.MethodPost, "/v1/leases/"+url.PathEscape(args[0])+"/heartbeat", nil,
				repomesh.HeartbeatRequest{AgentID: agent, TTL: renewTTL}, &l); err != nil {
				return err
			}
			return a.printLeases(l)
		},
	}
	renew.Flags().StringVar(&agent, "agent", "", "the holder's `AGENT_ID` (default: the token's name)")
	renew.Flags().IntVar(&renewTTL, "ttl", 0, "new time to live in `SECONDS` (default: the lease's)")
	return renew
}

func (a *App) leaseReleaseCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "release LEASE_ID",
		Short:   "Release a lease (its holder, or an admin)",
		Example: "  ampflow lease release Lc0ffee.cmVwbzphcHA6bWFpbg",
		Args:    exactArgs(1, "LEASE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var l repomesh.Lease
			if err := c.do(cmd.Context(), http.MethodDelete, "/v1/leases/"+url.PathEscape(args[0]), nil, nil, &l); err != nil {
				return err
			}
			return a.printLeases(l)
		},
	}
}

func (a *App) leaseListCommand() *cobra.Command {
	var agent, state, cursor string
	var limit int
	list := &cobra.Command{
		Use:     "list",
		Short:   "List leases, newest first",
		Example: "  ampflow lease list --state active\n  ampflow lease list --agent qwen-reviewer -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			q := url.Values{}
			setIf(q, "agent_id", agent)
			setIf(q, "state", state)
			setIf(q, "cursor", cursor)
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			var out struct {
				Leases     []json.RawMessage `json:"leases"`
				NextCursor string            `json:"next_cursor"`
			}
			if err := c.do(cmd.Context(), http.MethodGet, "/v1/leases?"+q.Encode(), nil, nil, &out); err != nil {
				return err
			}
			if a.JSON() {
				return a.printRawPage(cmd, args, out.Leases, out.NextCursor)
			}
			ls := make([]repomesh.Lease, len(out.Leases))
			for i, raw := range out.Leases {
				if err := json.Unmarshal(raw, &ls[i]); err != nil {
					return fmt.Errorf("reading a lease: %w", err)
				}
			}
			if err := a.printLeasesTable(ls); err != nil {
				return err
			}
			return a.printMore(cmd, args, out.NextCursor)
		},
	}
	list.Flags().StringVar(&agent, "agent", "", "only leases of `AGENT_ID`")
	list.Flags().StringVar(&state, "state", "", "only leases in `STATE`: active, expired or released")
	list.Flags().IntVar(&limit, "limit", 0, "at most `N` leases (1 to 1000; default 100)")
	list.Flags().StringVar(&cursor, "cursor", "", "go on from the `CURSOR` a previous page printed (its more: line)")
	return list
}

func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// printLeases prints one lease an acquire or renew answered.
func (a *App) printLeases(ls ...repomesh.Lease) error {
	if a.JSON() && len(ls) == 1 {
		return a.PrintJSON(ls[0])
	}
	return a.printLeasesTable(ls)
}

func (a *App) printLeasesTable(ls []repomesh.Lease) error {
	t := newTable(a.Stdout, "LEASE", "RESOURCE", "AGENT", "STATE", "TTL", "EXPIRES", "LAST HEARTBEAT")
	for _, l := range ls {
		state := l.State
		if l.Reason != "" {
			state += " (" + l.Reason + ")"
		}
		t.row(l.LeaseID, l.ResourceKey, l.AgentID, state, fmt.Sprintf("%ds", l.TTLSeconds),
			l.ExpiresAt.Format(time.RFC3339), l.LastHeartbeat.Format(time.RFC3339))
	}
	return t.flush()
}
