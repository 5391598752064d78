package workers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/config"
)

// The dev server's contract secret is made once and kept: a restart signs
// with the same secret, so contracts issued before it still verify.
func TestKeptContractSecret(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data", ContractSecretFile)
	first, err := keptSecret(file, "contract secret")
	if err != nil {
		t.Fatal(err)
	}
	again, err := keptSecret(file, "contract secret")
	if err != nil || again != first || len(first) != 64 {
		t.Fatalf("secret %q then %q (%v)", first, again, err)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v (%v); want 0600", st.Mode().Perm(), err)
	}
}

// The contract secret `ampflow dev` makes and keeps in data_dir is
// scrubbed from outputs like the configured secrets, and it is the one
// contracts are signed with.
func TestDevContractSecretScrubbed(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.SSOT.URL = filepath.Join(cfg.DataDir, "ampflow.db")
	cfg.Gate.ContractSecretEnv = "AMPFLOW_TEST_CONTRACT_KEY_UNSET"
	t.Setenv(cfg.Gate.ContractSecretEnv, "")
	os.Unsetenv(cfg.Gate.ContractSecretEnv)
	file := filepath.Join(cfg.DataDir, ContractSecretFile)
	parts, err := Build(Options{Config: cfg, ContractSecretFile: file, DecisionKeyFile: filepath.Join(cfg.DataDir, DecisionKeyFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer parts.Close()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" || parts.contractSecret != secret {
		t.Fatalf("kept secret %q, signing secret %q", secret, parts.contractSecret)
	}
	d, ok := parts.Activities.Delivery.(*delivery.Delivery)
	if !ok {
		t.Fatalf("delivery is a %T", parts.Activities.Delivery)
	}
	if got := d.Secrets.Scrub("key=" + secret); got != "key="+child.ScrubMask {
		t.Errorf("agent output %q shows the contract secret", got)
	}
}

// The embedded server's API key is temporal.api_key when set, else one
// made once in data_dir (0600) and kept across restarts.
func TestTemporalAPIKey(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	first, err := TemporalAPIKey(cfg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := TemporalAPIKey(cfg)
	if err != nil || again != first || len(first) != 64 {
		t.Fatalf("key %q then %q (%v)", first, again, err)
	}
	st, err := os.Stat(filepath.Join(cfg.DataDir, TemporalKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v); want 0600", st.Mode().Perm(), err)
	}
	cfg.Temporal.APIKey = "configured"
	if got, err := TemporalAPIKey(cfg); err != nil || got != "configured" {
		t.Fatalf("with temporal.api_key set: %q, %v", got, err)
	}
}
