// Package repo holds the checks that span the repository: the layering of
// its packages, the links of its docs, and the clients' own test suites.
package repo

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/integrations/httpapi"
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

// TestPythonClientVersion: the package's version (pyproject.toml and
// ampflow.__version__ agree) has the API's version as its major number.
func TestPythonClientVersion(t *testing.T) {
	dir := filepath.Join("..", "..", "clients", "python")
	raw, err := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version = "([0-9]+)\.[0-9]+\.[0-9]+"$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("pyproject.toml has no version = \"MAJOR.MINOR.PATCH\"")
	}
	init, err := os.ReadFile(filepath.Join(dir, "ampflow", "__init__.py"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimPrefix(string(regexp.MustCompile(`(?m)^version = "(.*)"$`).Find(raw)), "version = ")
	if !strings.Contains(string(init), "__version__ = "+version) {
		t.Errorf("ampflow.__version__ is not pyproject.toml's %s", version)
	}
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	if string(m[1]) != doc.Info.Version {
		t.Errorf("the package's major version is %s, the API's %s", m[1], doc.Info.Version)
	}
}
