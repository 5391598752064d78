// Package compose checks docker-compose.yml and the Dockerfile without
// Docker: the services, their images and how they are wired together.
package compose

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workers"
)

func TestServicesExist(t *testing.T) {
	c := readCompose(t)
	for _, name := range []string{svcPostgres, svcSchema, svcTemporal, svcNamespace, svcUI, svcAmpflow} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("docker-compose.yml has no service %q", name)
		}
	}
}

func TestImagesPinned(t *testing.T) {
	c := readCompose(t)
	for name, s := range c.Services {
		if s.Build != nil {
			continue
		}
		repo, tag := splitImage(s.Image)
		switch {
		case s.Image == "":
			t.Errorf("%s: neither image nor build", name)
		case tag == "" || tag == "latest":
			t.Errorf("%s: image %q is not pinned to a version", name, s.Image)
		case strings.Contains(s.Image, "$"):
			t.Errorf("%s: image %q depends on the environment", name, s.Image)
		case repo == "":
			t.Errorf("%s: image %q has no name", name, s.Image)
		}
	}

	server := goModVersion(t, "go.temporal.io/server")
	ui := goModVersion(t, "github.com/temporalio/ui-server/v2")
	for _, tc := range []struct{ service, repo, tag string }{
		{svcPostgres, "postgres", "16"},
		{svcSchema, adminImage, server},
		{svcTemporal, serverImage, server},
		{svcNamespace, adminImage, server},
		{svcUI, uiImage, ui},
	} {
		repo, tag := splitImage(c.svc(t, tc.service).Image)
		if repo != tc.repo || tag != tc.tag {
			t.Errorf("%s: image %s:%s, want %s:%s (from go.mod, for Temporal)", tc.service, repo, tag, tc.repo, tc.tag)
		}
	}
}

func TestPostgres(t *testing.T) {
	c := readCompose(t)
	pg := c.svc(t, svcPostgres)
	if pg.Healthcheck == nil || !strings.Contains(strings.Join(pg.Healthcheck.Test, " "), "pg_isready") {
		t.Errorf("postgresql healthcheck = %+v, want pg_isready", pg.Healthcheck)
	}
	var data bool
	for _, v := range pg.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == "/var/lib/postgresql/data" {
			_, named := c.Volumes[parts[0]]
			data = named
		}
	}
	if !data {
		t.Errorf("postgresql keeps its data in no named volume: %q", pg.Volumes)
	}
	user, pwd := pg.Environment["POSTGRES_USER"], pg.Environment["POSTGRES_PASSWORD"]
	if user == "" || pwd == "" {
		t.Fatalf("postgresql sets no POSTGRES_USER or POSTGRES_PASSWORD")
	}

	schema := c.svc(t, svcSchema).Environment
	server := c.svc(t, svcTemporal).Environment
	for _, tc := range []struct{ what, got, want string }{
		{"schema job SQL_HOST", schema["SQL_HOST"], svcPostgres},
		{"schema job SQL_USER", schema["SQL_USER"], user},
		{"schema job SQL_PASSWORD", schema["SQL_PASSWORD"], pwd},
		{"schema job SQL_PLUGIN", schema["SQL_PLUGIN"], postgresPlugin},
		{"temporal POSTGRES_SEEDS", server["POSTGRES_SEEDS"], svcPostgres},
		{"temporal POSTGRES_USER", server["POSTGRES_USER"], user},
		{"temporal POSTGRES_PWD", server["POSTGRES_PWD"], pwd},
		{"temporal DB", server["DB"], postgresPlugin},
		{"temporal DB_PORT", server["DB_PORT"], schema["SQL_PORT"]},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.what, tc.got, tc.want)
		}
	}
}

func TestSchemaJob(t *testing.T) {
	c := readCompose(t)
	s := c.svc(t, svcSchema)
	if got := s.DependsOn[svcPostgres].Condition; got != healthy {
		t.Errorf("schema job waits for postgresql with %q, want %s", got, healthy)
	}
	text := script(t, s)
	for _, want := range []string{
		"temporal-sql-tool", " create", "setup-schema", "update-schema",
		"temporal_visibility", "postgresql/v12/temporal", "postgresql/v12/visibility",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("schema script does not contain %q", want)
		}
	}
	if !strings.Contains(text, "set -e") {
		t.Error("schema script does not stop at the first failure (set -e)")
	}
}

func TestTemporalServer(t *testing.T) {
	c := readCompose(t)
	s := c.svc(t, svcTemporal)
	for dep, cond := range map[string]string{svcSchema: completed, svcPostgres: healthy} {
		if got := s.DependsOn[dep].Condition; got != cond {
			t.Errorf("temporal waits for %s with %q, want %s", dep, got, cond)
		}
	}
	if s.Healthcheck == nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), frontendPort) {
		t.Errorf("temporal healthcheck = %+v, want one on the frontend port", s.Healthcheck)
	}
	if s.Environment["BIND_ON_IP"] != "0.0.0.0" {
		t.Errorf("temporal BIND_ON_IP = %q: other containers could not reach it", s.Environment["BIND_ON_IP"])
	}
	dcPath := s.Environment["DYNAMIC_CONFIG_FILE_PATH"]
	if !strings.HasPrefix(dcPath, "/") {
		t.Fatalf("temporal DYNAMIC_CONFIG_FILE_PATH = %q, want an absolute path", dcPath)
	}
	var dc map[string][]struct {
		Value       any            `yaml:"value"`
		Constraints map[string]any `yaml:"constraints"`
	}
	if err := yaml.Unmarshal([]byte(mountedFile(t, s, dcPath)), &dc); err != nil {
		t.Fatalf("dynamic config %s: %v", dcPath, err)
	}
	if len(dc) == 0 {
		t.Errorf("dynamic config %s sets nothing", dcPath)
	}
	for _, p := range s.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("temporal publishes %q beyond loopback: its frontend has no authentication", p)
		}
	}
}

func TestNamespaceJob(t *testing.T) {
	c := readCompose(t)
	s := c.svc(t, svcNamespace)
	if got := s.DependsOn[svcTemporal].Condition; got != healthy {
		t.Errorf("namespace job waits for temporal with %q, want %s", got, healthy)
	}
	if got, want := s.Environment["TEMPORAL_ADDRESS"], temporalAddress(t, c); got != want {
		t.Errorf("namespace job TEMPORAL_ADDRESS = %q, want %q", got, want)
	}
	ns := c.svc(t, svcAmpflow).Environment[config.EnvName("temporal.namespace")]
	if ns == "" {
		ns = config.New().GetString("temporal.namespace")
	}
	if got := s.Environment["TEMPORAL_NAMESPACE"]; got != ns {
		t.Errorf("namespace job creates %q, ampflow uses %q", got, ns)
	}

	got := map[string]string{}
	for _, pair := range strings.Fields(s.Environment["SEARCH_ATTRIBUTES"]) {
		name, typ, ok := strings.Cut(pair, "=")
		if !ok {
			t.Errorf("SEARCH_ATTRIBUTES item %q is not Name=Type", pair)
			continue
		}
		got[name] = typ
	}
	want := map[string]string{}
	for name, typ := range workers.SearchAttributes() {
		want[name] = typ.String() // Keyword, Int: the names the temporal CLI takes
	}
	if len(want) != 4 {
		t.Errorf("workers.SearchAttributes() has %d attributes, this test expects 4", len(want))
	}
	for name, typ := range want {
		if got[name] != typ {
			t.Errorf("SEARCH_ATTRIBUTES: %s is %q, workers.SearchAttributes wants %s", name, got[name], typ)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("SEARCH_ATTRIBUTES: %s is not one of workers.SearchAttributes", name)
		}
	}

	text := script(t, s)
	for _, want := range []string{
		"temporal operator cluster health",
		"temporal operator namespace create",
		"temporal operator search-attribute create",
		"$SEARCH_ATTRIBUTES", "$TEMPORAL_ADDRESS", "$TEMPORAL_NAMESPACE",
		"set -e",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("namespace script does not contain %q", want)
		}
	}
}

func TestUI(t *testing.T) {
	c := readCompose(t)
	s := c.svc(t, svcUI)
	if got, want := s.Environment["TEMPORAL_ADDRESS"], temporalAddress(t, c); got != want {
		t.Errorf("temporal-ui TEMPORAL_ADDRESS = %q, want %q", got, want)
	}
	if !slices.Contains(s.Ports, "127.0.0.1:8080:8080") {
		t.Errorf("temporal-ui ports = %q, want 127.0.0.1:8080:8080 (it has no authentication)", s.Ports)
	}
	if got := s.DependsOn[svcTemporal].Condition; got != healthy {
		t.Errorf("temporal-ui waits for temporal with %q, want %s", got, healthy)
	}
}

// requiredVar matches compose's "fail unless set" interpolation: ${NAME:?message}.
var requiredVar = regexp.MustCompile(`^\$\{([A-Z0-9_]+):\?[^}]+\}$`)

func TestAmpflow(t *testing.T) {
	c := readCompose(t)
	s := c.svc(t, svcAmpflow)
	if s.Build == nil {
		t.Fatal("ampflow is not built from the repository")
	}
	if s.Build.Context != "." {
		t.Errorf("ampflow build context = %q, want .", s.Build.Context)
	}
	dockerfile := s.Build.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if _, err := os.Stat(filepath.Join(root, s.Build.Context, dockerfile)); err != nil {
		t.Errorf("ampflow build: %v", err)
	}
	if !slices.Equal(s.Command, []string{"worker"}) {
		t.Errorf("ampflow command = %q, want [worker]", s.Command)
	}
	if got := s.DependsOn[svcNamespace].Condition; got != completed {
		t.Errorf("ampflow waits for %s with %q, want %s", svcNamespace, got, completed)
	}
	if s.Restart != "unless-stopped" {
		t.Errorf("ampflow restart = %q, want unless-stopped", s.Restart)
	}

	env := s.Environment
	if got, want := env[config.EnvName("temporal.address")], temporalAddress(t, c); got != want {
		t.Errorf("ampflow %s = %q, want %q", config.EnvName("temporal.address"), got, want)
	}

	addr := env[config.EnvName("http.addr")]
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("ampflow %s = %q: %v", config.EnvName("http.addr"), addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		t.Errorf("ampflow listens on %q; published ports need 0.0.0.0", addr)
	}
	if !slices.ContainsFunc(s.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+port) }) {
		t.Errorf("ampflow ports %q do not publish the API port %s", s.Ports, port)
	}
	// Beyond loopback ampflow refuses to start without tokens; compose must
	// refuse first, with a message, rather than start a crashing container.
	tokens := config.EnvName("auth.tokens")
	if m := requiredVar.FindStringSubmatch(env[tokens]); m == nil || m[1] != tokens {
		t.Errorf("ampflow %s = %q, want ${%s:?message} so compose refuses to start without tokens", tokens, env[tokens], tokens)
	}

	dataDir := env[config.EnvName("data_dir")]
	if dataDir == "" {
		t.Fatalf("ampflow sets no %s", config.EnvName("data_dir"))
	}
	var kept bool
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == dataDir {
			_, kept = c.Volumes[parts[0]]
		}
	}
	if !kept {
		t.Errorf("ampflow's data dir %s is not a named volume: %q", dataDir, s.Volumes)
	}
}

// pendingKeys are variables docker-compose.yml may set ahead of their
// configuration key, which config ignores until the key exists; the test
// says when one has become a key.
var pendingKeys = map[string]bool{}

// composeVar matches a variable compose interpolates: ${NAME...} or $NAME.
var composeVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

func TestAmpflowVariablesAreConfigKeys(t *testing.T) {
	known := map[string]bool{}
	for _, k := range config.Keys() {
		known[config.EnvName(k)] = true
	}
	if !known["AMPFLOW_TEMPORAL_ADDRESS"] {
		t.Fatal("config.Keys does not give AMPFLOW_TEMPORAL_ADDRESS; the check below would prove nothing")
	}
	c := readCompose(t)
	var used []string
	for _, s := range c.Services {
		for name := range s.Environment {
			used = append(used, name)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range composeVar.FindAllStringSubmatch(string(data), -1) {
		used = append(used, m[1])
	}
	var checked int
	for _, name := range used {
		if !strings.HasPrefix(name, config.EnvPrefix) {
			continue
		}
		checked++
		if !known[name] && !pendingKeys[name] {
			t.Errorf("docker-compose.yml uses %s, which is no configuration key", name)
		}
	}
	for name := range pendingKeys {
		if known[name] {
			t.Errorf("%s is a configuration key now: remove it from pendingKeys", name)
		}
	}
	if checked == 0 {
		t.Error("docker-compose.yml uses no AMPFLOW_ variable")
	}
}
