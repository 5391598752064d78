package workers

import (
	"os"
	"path/filepath"
	"testing"
)

// The dev server's contract secret is made once and kept: a restart signs
// with the same secret, so contracts issued before it still verify.
func TestKeptContractSecret(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data", ContractSecretFile)
	first, err := keptSecret(file)
	if err != nil {
		t.Fatal(err)
	}
	again, err := keptSecret(file)
	if err != nil || again != first || len(first) != 64 {
		t.Fatalf("secret %q then %q (%v)", first, again, err)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v (%v); want 0600", st.Mode().Perm(), err)
	}
}
