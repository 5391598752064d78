// Package ssottest gives tests outside package ssot fresh stores on each
// engine: SQLite always, PostgreSQL when AMPFLOW_TEST_POSTGRES names a
// server, each store a database of its own dropped when the test ends.
package ssottest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Engine makes the URLs of new, empty stores of one engine.
type Engine struct {
	Name string
	URL  func(t testing.TB) string
}

// Engines are SQLite and PostgreSQL; PostgreSQL's URL skips the test
// when AMPFLOW_TEST_POSTGRES is unset.
func Engines() []Engine {
	return []Engine{
		{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "ampflow.db") }},
		{"postgres", PostgresURL},
	}
}

// PostgresURL creates a database on the server AMPFLOW_TEST_POSTGRES
// names, drops it when the test ends, and returns its URL.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("AMPFLOW_TEST_POSTGRES")
	if base == "" {
		t.Skip("AMPFLOW_TEST_POSTGRES is unset: no PostgreSQL server to test against (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES: %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "ampflow_test_" + hex.EncodeToString(b)
	admin := func(stmt string) error {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return err
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = db.ExecContext(ctx, stmt)
		return err
	}
	if err := admin("CREATE DATABASE " + name); err != nil {
		t.Fatalf("creating database %s on AMPFLOW_TEST_POSTGRES: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}
