package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/resolver"
)

func TestParsePostgres(t *testing.T) {
	long := strings.Repeat("x", maxDatabaseName-len(VisibilitySuffix)+1)
	tests := []struct {
		raw, wantErr string
		addr, user   string
		main, vis    string
	}{
		{raw: "postgres://temporal:pw@db:5433/temporal?sslmode=disable", addr: "db:5433", user: "temporal", main: "temporal", vis: "temporal_visibility"},
		{raw: "postgresql://postgres@127.0.0.1/t1", addr: "127.0.0.1:5432", user: "postgres", main: "t1", vis: "t1_visibility"},
		{raw: "mysql://u@h/db", wantErr: `scheme "mysql"`},
		{raw: "postgres://u@h/", wantErr: "does not name one database"},
		{raw: "postgres://u@h/a/b", wantErr: "does not name one database"},
		{raw: "postgres://h/db", wantErr: "no user"},
		{raw: "postgres://u@/db", wantErr: "no host"},
		{raw: "postgres://u@h/" + long, wantErr: "longer than 63 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			s, err := parsePostgres(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.main.ConnectAddr != tt.addr || s.main.User != tt.user || s.main.DatabaseName != tt.main || s.visibility.DatabaseName != tt.vis {
				t.Errorf("got %s %s %s %s", s.main.ConnectAddr, s.main.User, s.main.DatabaseName, s.visibility.DatabaseName)
			}
			if strings.Contains(s.server, "pw") {
				t.Errorf("the URL for messages %q shows the password", s.server)
			}
		})
	}
	s, _ := parsePostgres("postgres://u:secret@h/db?sslmode=require")
	if s.main.Password != "secret" || s.visibility.ConnectAttributes["sslmode"] != "require" {
		t.Errorf("password %q, attributes %v", s.main.Password, s.visibility.ConnectAttributes)
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int // sign
	}{
		{"1.9", "1.10", -1},
		{"1.10", "1.9", 1},
		{"1.19", "1.19", 0},
		{"0.0", "1.0", -1},
		{"2", "1.99", 1},
		{"1.1", "1.1.0", 0},
	}
	for _, tt := range tests {
		got := compareVersions(tt.a, tt.b)
		if (got > 0) != (tt.want > 0) || (got < 0) != (tt.want < 0) {
			t.Errorf("compareVersions(%s, %s) = %d, want sign %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// testPostgres returns the URL of a fresh database on the server that
// AMPFLOW_TEST_POSTGRES names, dropped with its visibility twin when t
// ends, or skips t.
func testPostgres(t *testing.T) string {
	t.Helper()
	admin := os.Getenv("AMPFLOW_TEST_POSTGRES")
	if admin == "" {
		t.Skip("AMPFLOW_TEST_POSTGRES is not set (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)")
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES: %v", err)
	}
	name := fmt.Sprintf("temporal_devserver_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("dropping %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		for _, db := range []string{name, name + VisibilitySuffix} {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Errorf("dropping %s: %v", db, err)
			}
		}
	})
	u.Path = "/" + name
	return u.String()
}

// TestPostgres starts a server on new databases, runs a workflow, starts
// it again on the same databases, and refuses them once their schema
// claims a newer version.
func TestPostgres(t *testing.T) {
	db := testPostgres(t)
	s := mustStartServer(t, Options{Postgres: db, SearchAttributes: ampAttributes})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := dial(t, s, DefaultNamespace)
	w := worker.New(c, "devserver-pg", worker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-pg", TaskQueue: "devserver-pg"}, greet, greetInput{Name: "pg"})
	if err != nil {
		t.Fatal(err)
	}
	var res greetResult
	if err := run.Get(ctx, &res); err != nil || res.Greeting != "hello pg" {
		t.Fatalf("greet: %q, %v", res.Greeting, err)
	}
	w.Stop()
	c.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	// Again: the schema is current and the namespace exists.
	s = mustStartServer(t, Options{Postgres: db, SearchAttributes: ampAttributes})
	c = dial(t, s, DefaultNamespace)
	if _, err := c.DescribeWorkflowExecution(ctx, "greet-pg", ""); err != nil {
		t.Errorf("the workflow of the first start is gone: %v", err)
	}
	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: DefaultNamespace})
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range ampAttributes {
		if got := attrs.GetCustomAttributes()[name]; got != typ {
			t.Errorf("search attribute %s: %v, want %v", name, got, typ)
		}
	}
	c.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, "SELECT curr_version FROM schema_version").Scan(&version); err != nil || version == "" {
		t.Fatalf("schema version %q, %v", version, err)
	}
	if _, err := conn.Exec(ctx, "UPDATE schema_version SET curr_version = '99.0'"); err != nil {
		t.Fatal(err)
	}
	if s, err := Start(ctx, Options{Postgres: db, Logger: testLogger()}); err == nil {
		_ = s.Stop()
		t.Fatal("Start succeeded on a database of schema version 99.0")
	} else if !strings.Contains(err.Error(), "99.0 is newer than "+version) {
		t.Errorf("Start: %v, want it to say 99.0 is newer than %s", err, version)
	}
}

// TestPostgresUpdateSchema brings databases at schema version 0.0 up to
// date through every embedded versioned update, as temporal-sql-tool's
// update-schema would, and starts a server on them.
func TestPostgresUpdateSchema(t *testing.T) {
	db := testPostgres(t)
	stores, err := parsePostgres(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logger := newServerLogger(testLogger(), slog.LevelWarn, new(atomic.Bool))
	for _, s := range []struct {
		cfg  *config.SQL
		kind sqlplugin.DbKind
		dir  string
	}{
		{stores.main, sqlplugin.DbKindMain, "postgresql/v12/temporal"},
		{stores.visibility, sqlplugin.DbKindVisibility, "postgresql/v12/visibility"},
	} {
		if err := createPostgresDatabase(ctx, db, s.cfg.DatabaseName); err != nil {
			t.Fatal(err)
		}
		admin, err := sql.NewSQLAdminDB(s.kind, s.cfg, resolver.NewNoopResolver(), logger, metrics.NoopMetricsHandler)
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.CreateSchemaVersionTables(); err != nil {
			t.Fatal(err)
		}
		if err := updateSchema(admin, s.cfg.DatabaseName, s.dir, "0.0", admin.ExpectedVersion()); err != nil {
			t.Fatalf("updating %s from 0.0: %v", s.cfg.DatabaseName, err)
		}
		if err := admin.VerifyVersion(); err != nil {
			t.Errorf("%s after the updates: %v", s.cfg.DatabaseName, err)
		}
		admin.Close()
	}
	mustStartServer(t, Options{Postgres: db, SearchAttributes: ampAttributes})
}
