package workers

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/config"
)

// TestDataDirPrivate: a worker's data_dir is its owner's only, and the
// SSOT database in it too, whether they were there before or not.
func TestDataDirPrivate(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, existed := range []bool{false, true} {
		cfg := config.Default()
		cfg.DataDir = filepath.Join(t.TempDir(), "data")
		cfg.SSOT.URL = ""
		cfg.Admins = config.AdminsNamed("ana")
		if existed {
			if err := os.Mkdir(cfg.DataDir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		o := Options{Config: cfg, Temporal: c, Logger: slog.New(slog.DiscardHandler),
			ContractSecretFile: filepath.Join(cfg.DataDir, "contract.secret"), DecisionKeyFile: filepath.Join(cfg.DataDir, DecisionKeyFile)}
		parts, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		parts.Close()
		for p, want := range map[string]os.FileMode{cfg.DataDir: 0o700, filepath.Join(cfg.DataDir, config.DefaultSSOTFile): 0o600} {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if m := st.Mode().Perm(); m != want {
				t.Errorf("existed %v: %s has mode %o, want %o", existed, p, m, want)
			}
		}
	}
}
