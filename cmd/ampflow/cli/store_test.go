package cli

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

// storeEngine makes fresh, empty SSOT stores of one kind.
type storeEngine struct {
	name string
	// url returns the URL of a new store; sqlDriver and dsn open it
	// raw, to tamper with it as someone with database access could.
	url       func(t *testing.T) string
	sqlDriver string
	dsn       func(u string) string
}

// storeEngines are SQLite always and PostgreSQL when
// AMPFLOW_TEST_POSTGRES names a server; each PostgreSQL store is a
// database of its own, dropped when the test ends.
var storeEngines = []storeEngine{
	{ssot.EngineSQLite, func(t *testing.T) string { return filepath.Join(t.TempDir(), "ampflow.db") },
		"sqlite", func(u string) string { return "file:" + u + "?_pragma=busy_timeout(10000)" }},
	{ssot.EnginePostgres, postgresStore, "pgx", func(u string) string { return u }},
}

// eachStoreEngine runs f once per engine.
func eachStoreEngine(t *testing.T, f func(t *testing.T, e storeEngine)) {
	for _, e := range storeEngines {
		t.Run(e.name, func(t *testing.T) { f(t, e) })
	}
}

func postgresStore(t *testing.T) string {
	t.Helper()
	base := os.Getenv("AMPFLOW_TEST_POSTGRES")
	if base == "" {
		t.Skip("AMPFLOW_TEST_POSTGRES is unset: no PostgreSQL server to test against (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)")
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "ampflow_cli_test_" + hex.EncodeToString(b)
	adminExec(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { adminExec(t, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func adminExec(t *testing.T, base, stmt string) {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		t.Errorf("%s on AMPFLOW_TEST_POSTGRES: %v", stmt, err)
	}
}

// openTestStore opens the store at u; it is closed when the test ends.
func openTestStore(t *testing.T, u string) *ssot.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := ssot.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.KeyChain(testStoreKey)
	return db
}

// testStoreKey is the decision key the test stores' chains are keyed
// with, and storeEnv gives the CLI.
var testStoreKey = []byte("0123456789abcdef0123456789abcdef")

// appendTo appends records with the given ids, bodies naming them.
func appendTo(t *testing.T, db ssot.Chains, task string, ids ...string) {
	t.Helper()
	var es []ssot.Entry
	for _, id := range ids {
		es = append(es, ssot.Entry{ID: id, Kind: "message", RecordedAt: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC),
			Body: json.RawMessage(`{"msg_id":"` + id + `","task_id":"` + task + `"}`)})
	}
	if _, err := db.Append(context.Background(), task, es); err != nil {
		t.Fatal(err)
	}
}

// rawExec runs a statement on the store's database behind its back; ?
// placeholders are rewritten for PostgreSQL.
func rawExec(t *testing.T, e storeEngine, u, stmt string, args ...any) {
	t.Helper()
	db, err := sql.Open(e.sqlDriver, e.dsn(u))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if e.name == ssot.EnginePostgres {
		for i := 1; strings.Contains(stmt, "?"); i++ {
			stmt = strings.Replace(stmt, "?", "$"+string(rune('0'+i)), 1)
		}
	}
	res, err := db.Exec(stmt, args...)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("%s: %d rows, %v; want 1", stmt, n, err)
	}
}

// storeEnv is the environment of a command run against the store at u,
// with data_dir in a temporary directory so no default touches the
// working directory.
func storeEnv(t *testing.T, u string) map[string]string {
	return map[string]string{"AMPFLOW_SSOT_URL": u, "AMPFLOW_DATA_DIR": t.TempDir(), "AMPFLOW_AUTH_DECISION_KEY": hex.EncodeToString(testStoreKey)}
}
