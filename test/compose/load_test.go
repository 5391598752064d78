package compose

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// root is the repository root, relative to this package.
const root = "../.."

// Service names the tests expect.
const (
	svcPostgres    = "postgresql"
	svcSchema      = "temporal-admin-tools"
	svcTemporal    = "temporal"
	svcNamespace   = "temporal-create-namespace"
	svcUI          = "temporal-ui"
	svcAmpflow     = "ampflow"
	completed      = "service_completed_successfully"
	healthy        = "service_healthy"
	serverImage    = "temporalio/server"
	adminImage     = "temporalio/admin-tools"
	uiImage        = "temporalio/ui"
	frontendPort   = "7233"
	postgresPlugin = "postgres12"
)

type composeFile struct {
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

type service struct {
	Image       string                `yaml:"image"`
	Build       *build                `yaml:"build"`
	Command     []string              `yaml:"command"`
	Entrypoint  []string              `yaml:"entrypoint"`
	Environment map[string]string     `yaml:"environment"`
	DependsOn   map[string]dependency `yaml:"depends_on"`
	Volumes     []string              `yaml:"volumes"`
	Ports       []string              `yaml:"ports"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Restart       string `yaml:"restart"`
	ContainerName string `yaml:"container_name"`
	Hostname      string `yaml:"hostname"`
}

type build struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

type dependency struct {
	Condition string `yaml:"condition"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("parsing docker-compose.yml (environment must be a map, command and entrypoint lists): %v", err)
	}
	return c
}

// svc returns the named service, failing the test when it is missing.
func (c composeFile) svc(t *testing.T, name string) service {
	t.Helper()
	s, ok := c.Services[name]
	if !ok {
		t.Fatalf("docker-compose.yml has no service %q", name)
	}
	return s
}

// goModVersion returns the version go.mod requires of module, or its go
// line when module is "go".
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return strings.TrimPrefix(f[1], "v")
		}
	}
	t.Fatalf("go.mod does not name %s", module)
	return ""
}

// splitImage splits "repo:tag"; a registry port is not a tag.
func splitImage(image string) (repo, tag string) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return image, ""
	}
	return image[:i], image[i+1:]
}

// hostPath returns the repository file a service sees at target: mounted
// there, or inside a mounted directory.
func hostPath(t *testing.T, s service, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			continue
		}
		src, dst := parts[0], parts[1]
		rel, err := filepath.Rel(dst, target)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if !strings.HasPrefix(src, "./") {
			t.Fatalf("%s is mounted from %q, not from the repository", target, src)
		}
		return filepath.Join(root, src, rel)
	}
	t.Fatalf("nothing is mounted at %s (volumes %q)", target, s.Volumes)
	return ""
}

// mountedFile returns the text of the repository file a service sees at target.
func mountedFile(t *testing.T, s service, target string) string {
	t.Helper()
	data, err := os.ReadFile(hostPath(t, s, target))
	if err != nil {
		t.Fatalf("mounted at %s: %v", target, err)
	}
	return string(data)
}

// script returns the text of the mounted script a one-shot service runs.
func script(t *testing.T, s service) string {
	t.Helper()
	if len(s.Entrypoint) != 2 || s.Entrypoint[0] != "/bin/sh" {
		t.Fatalf("entrypoint = %q, want [/bin/sh SCRIPT]", s.Entrypoint)
	}
	return mountedFile(t, s, s.Entrypoint[1])
}

// temporalAddress is host:port of the temporal service's frontend, as other
// containers reach it.
func temporalAddress(t *testing.T, c composeFile) string {
	t.Helper()
	s := c.svc(t, svcTemporal)
	port := frontendPort
	if p := s.Environment["FRONTEND_GRPC_PORT"]; p != "" {
		port = p
	}
	return net.JoinHostPort(svcTemporal, port)
}
