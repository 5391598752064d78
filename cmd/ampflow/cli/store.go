package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
)

// groupOperator holds the commands that open the SSOT store itself rather
// than go through the HTTP API: an operator's tools on the database.
const groupOperator = "operator"

// storeHelp closes the help of every operator command.
const storeHelp = "\nIt opens the SSOT store named by ssot.url (AMPFLOW_SSOT_URL, default\n" +
	"<data_dir>/ampflow.db; a postgres:// URL is PostgreSQL) or --ssot-url, not the\n" +
	"HTTP API, and may run while workers write to the store."

// storeFlags is the --ssot-url flag of the operator commands.
type storeFlags struct{ url string }

func (f *storeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "ssot-url", "", "the SSOT store: a SQLite file or a postgres:// `URL` (overrides ssot.url)")
}

// openStore opens the store: --ssot-url, else ssot.url. With mustExist a
// SQLite file that does not exist is an error rather than a new, empty
// store, which a command reading the store would take for a clean one.
//
// The store's chain is keyed with the decision key (config's
// StoreDecisionKey) when one is found; a store opened without it reads,
// but cannot verify its records (Keyed is false).
func (a *App) openStore(ctx context.Context, f storeFlags, mustExist bool) (*ssot.DB, error) {
	c, err := a.Config()
	if err != nil {
		return nil, err
	}
	url, setting := f.url, "--ssot-url"
	if url == "" {
		url, setting = c.SSOT.URL, "ssot.url"
	}
	key, err := c.StoreDecisionKey()
	if err != nil && !errors.Is(err, config.ErrNoDecisionKey) {
		return nil, err
	}
	if mustExist && !isPostgresURL(url) {
		path := strings.TrimPrefix(url, "sqlite://")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no SSOT store at %s: check %s", path, setting)
		}
	}
	db, err := ssot.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("opening the SSOT store (%s): %w", setting, err)
	}
	if key != nil {
		db.KeyChain(key)
	}
	return db, nil
}

func isPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}
