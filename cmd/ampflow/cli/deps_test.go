package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The Temporal server must reach the binary only through Options.Extra:
// linked here, it would weigh on every test of this package.
func TestDoesNotLinkTemporalServer(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/spf13/cobra") {
		t.Fatalf("go list -deps does not list cobra: %q", deps)
	}
	for _, pkg := range deps {
		if strings.HasPrefix(pkg, "go.temporal.io/server/") {
			t.Fatalf("package cli depends on %s", pkg)
		}
	}
}
