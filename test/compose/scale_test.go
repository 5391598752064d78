package compose

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The SSOT URL key; a literal until config has it (see pendingKeys).
const ssotURLVar = "AMPFLOW_SSOT_URL"

// TestAmpflowSSOT checks the workers keep the SSOT on the compose
// PostgreSQL, in a database of its own that the setup job creates before
// any worker starts.
func TestAmpflowSSOT(t *testing.T) {
	c := readCompose(t)
	s := c.svc(t, svcAmpflow)
	raw := s.Environment[ssotURLVar]
	if raw == "" {
		t.Fatalf("ampflow sets no %s: every worker would keep its own SSOT", ssotURLVar)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("ampflow %s = %q: %v", ssotURLVar, raw, err)
	}
	pg := c.svc(t, svcPostgres).Environment
	password, _ := u.User.Password()
	db := strings.TrimPrefix(u.Path, "/")
	for _, tc := range []struct{ what, got, want string }{
		{"scheme", u.Scheme, "postgres"},
		{"host", u.Hostname(), svcPostgres},
		{"port", u.Port(), c.svc(t, svcSchema).Environment["SQL_PORT"]},
		{"user", u.User.Username(), pg["POSTGRES_USER"]},
		{"password", password, pg["POSTGRES_PASSWORD"]},
		{"sslmode", u.Query().Get("sslmode"), "disable"},
	} {
		if tc.got != tc.want {
			t.Errorf("ampflow %s: %s %q, want %q", ssotURLVar, tc.what, tc.got, tc.want)
		}
	}
	switch db {
	case "", "postgres", "temporal", "temporal_visibility":
		t.Fatalf("ampflow %s names database %q, want one of ampflow's own", ssotURLVar, db)
	}
	create := regexp.MustCompile(`temporal-sql-tool --db "?` + regexp.QuoteMeta(db) + `"? create`)
	if !create.MatchString(script(t, c.svc(t, svcSchema))) {
		t.Errorf("the setup script does not create database %s (temporal-sql-tool --db %s create)", db, db)
	}
	if got := s.DependsOn[svcSchema].Condition; got != completed {
		t.Errorf("ampflow waits for %s with %q, want %s: the SSOT database must exist first", svcSchema, got, completed)
	}
}

// hostPortRange matches a published port with a host port range:
// 127.0.0.1:7480-7489:7480.
var hostPortRange = regexp.MustCompile(`^127\.0\.0\.1:(\d+)-(\d+):(\d+)$`)

// TestAmpflowScales checks `docker compose up --scale ampflow=3` can work:
// no fixed container name, hostname or host port two replicas would both
// claim, and room in the published range for several workers.
func TestAmpflowScales(t *testing.T) {
	c := readCompose(t)
	s := c.svc(t, svcAmpflow)
	if s.ContainerName != "" {
		t.Errorf("ampflow container_name %q: replicas need compose's own names", s.ContainerName)
	}
	if s.Hostname != "" {
		t.Errorf("ampflow hostname %q: replicas would share it", s.Hostname)
	}
	if len(s.Ports) == 0 {
		t.Fatal("ampflow publishes no port: its API could not be reached from the host")
	}
	for _, p := range s.Ports {
		m := hostPortRange.FindStringSubmatch(p)
		if m == nil {
			t.Errorf("ampflow publishes %q; want 127.0.0.1:FIRST-LAST:PORT, a range on the loopback, so replicas do not clash", p)
			continue
		}
		first, _ := strconv.Atoi(m[1])
		last, _ := strconv.Atoi(m[2])
		if last-first+1 < 3 {
			t.Errorf("ampflow publishes %q: room for %d workers, want at least 3", p, last-first+1)
		}
	}
}
