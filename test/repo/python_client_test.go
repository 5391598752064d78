// Package repo holds the checks that span the repository: the layering of
// its packages, the links of its docs, and the clients' own test suites.
package repo

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPythonClient runs clients/python's unittest suite (standard library
// only) against its loopback stub of the API; test/e2e runs the package
// against ampflow dev.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to test clients/python (.ci/run installs it)")
	}
	cmd := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = filepath.Join("..", "..", "clients", "python")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
