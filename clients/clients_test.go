// Package clients holds the clients for agent authors; this test runs
// their own test suites.
package clients

import (
	"os/exec"
	"testing"
)

// TestPythonClient runs clients/python's unittest suite (standard library
// only) against its loopback stub of the API.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to test clients/python (.ci/run installs it)")
	}
	cmd := exec.Command(python, "-m", "unittest", "-v", "test_ampflow_client")
	cmd.Dir = "python"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
