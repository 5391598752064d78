package workers

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/config"
)

// TestDecisionKey: a worker gets its decision key from the configuration
// (value, else file); `ampflow dev` makes one in data_dir, 0600, and reads
// it back on the next start; without any, Build refuses naming the
// variable and the file setting.
func TestDecisionKey(t *testing.T) {
	t.Run("Missing", func(t *testing.T) {
		cfg := config.Default()
		cfg.DataDir = t.TempDir()
		cfg.SSOT.URL = filepath.Join(cfg.DataDir, "ampflow.db")
		_, err := Build(Options{Config: cfg})
		if !errors.Is(err, config.ErrNoDecisionKey) || !strings.Contains(err.Error(), "AMPFLOW_AUTH_DECISION_KEY") ||
			!strings.Contains(err.Error(), "auth.decision_key_file") {
			t.Errorf("Build without a key: %v; want it refused naming AMPFLOW_AUTH_DECISION_KEY and auth.decision_key_file", err)
		}
	})
	t.Run("MadeByDev", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "data", DecisionKeyFile)
		first, err := resolveDecisionKey(config.Default(), file)
		if err != nil || len(first) != 32 {
			t.Fatalf("first start: %x, %v", first, err)
		}
		st, err := os.Stat(file)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", file, err, st.Mode().Perm())
		}
		again, err := resolveDecisionKey(config.Default(), file)
		if err != nil || string(again) != string(first) {
			t.Errorf("second start: %x, %v; want the kept key %x", again, err, first)
		}
	})
	t.Run("Configured", func(t *testing.T) {
		cfg := config.Default()
		cfg.Auth.DecisionKey = strings.Repeat("ab", 32)
		file := filepath.Join(t.TempDir(), DecisionKeyFile)
		k, err := resolveDecisionKey(cfg, file)
		if err != nil || k[0] != 0xab || len(k) != 32 {
			t.Errorf("configured key: %x, %v", k, err)
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a configured key made %s too: %v", file, err)
		}
		cfg.Auth.DecisionKey, cfg.Auth.DecisionKeyFile = "", filepath.Join(t.TempDir(), "key")
		if err := os.WriteFile(cfg.Auth.DecisionKeyFile, []byte(strings.Repeat("cd", 32)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if k, err := resolveDecisionKey(cfg, file); err != nil || k[0] != 0xcd {
			t.Errorf("key from auth.decision_key_file: %x, %v", k, err)
		}
		cfg.Auth.DecisionKey = "too-short"
		if _, err := resolveDecisionKey(cfg, file); err == nil || !strings.Contains(err.Error(), "auth.decision_key") {
			t.Errorf("a short key: %v; want it refused", err)
		}
	})
}
