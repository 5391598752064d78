package devserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	postgresplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/resolver"
	dbschemas "go.temporal.io/server/schema"
)

const (
	// VisibilitySuffix names the visibility database after the main one:
	// postgres://…/temporal keeps visibility in temporal_visibility, as
	// docker-compose.yml's setup does.
	VisibilitySuffix = "_visibility"
	// MaintenanceDatabase is the database connected to when creating
	// Temporal's databases; every PostgreSQL server has it.
	MaintenanceDatabase = "postgres"
	// postgresShards is the number of history shards on PostgreSQL. It is
	// fixed when the database is created and must never change; it is the
	// temporalio/server image's default, the one docker-compose.yml uses.
	postgresShards = 4
	// maxDatabaseName is PostgreSQL's limit on an identifier, in bytes.
	maxDatabaseName = 63
)

// pgStores are the persistence settings of Temporal's two databases.
type pgStores struct {
	main, visibility *config.SQL
	// server is the URL with the credentials hidden, for messages.
	server string
}

// parsePostgres reads Options.Postgres: postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?PARAMS],
// the query parameters (sslmode and the like) passed to the driver.
func parsePostgres(raw string) (pgStores, error) {
	const field = "temporal database URL"
	u, err := url.Parse(raw)
	if err != nil {
		// The error would repeat the URL, password and all.
		return pgStores{}, fmt.Errorf("%s: not a URL; want postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=disable", field)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return pgStores{}, fmt.Errorf("%s: scheme %q, want postgres://USER:PASSWORD@HOST:PORT/DB", field, u.Scheme)
	}
	db := strings.TrimPrefix(u.Path, "/")
	switch {
	case u.Hostname() == "":
		return pgStores{}, fmt.Errorf("%s: no host; want postgres://USER:PASSWORD@HOST:PORT/DB", field)
	case u.User.Username() == "":
		return pgStores{}, fmt.Errorf("%s: no user; want postgres://USER:PASSWORD@HOST:PORT/DB", field)
	case db == "" || strings.Contains(db, "/"):
		return pgStores{}, fmt.Errorf("%s: path %q does not name one database; want postgres://USER:PASSWORD@HOST:PORT/DB", field, u.Path)
	case len(db)+len(VisibilitySuffix) > maxDatabaseName:
		return pgStores{}, fmt.Errorf("%s: database name %q is longer than %d bytes with %s appended", field, db, maxDatabaseName, VisibilitySuffix)
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	attrs := map[string]string{}
	for k, v := range u.Query() {
		attrs[k] = v[len(v)-1]
	}
	password, _ := u.User.Password()
	store := func(name string) *config.SQL {
		return &config.SQL{
			PluginName:        postgresplugin.PluginName,
			User:              u.User.Username(),
			Password:          password,
			DatabaseName:      name,
			ConnectAddr:       net.JoinHostPort(u.Hostname(), port),
			ConnectProtocol:   "tcp",
			ConnectAttributes: attrs,
			// Temporal's own defaults for a small cluster.
			MaxConns:     20,
			MaxIdleConns: 20,
		}
	}
	return pgStores{
		main:       store(db),
		visibility: store(db + VisibilitySuffix),
		server:     u.Redacted(),
	}, nil
}

// preparePostgres creates the databases that are missing, then gives each
// the schema of this server version: a new database the whole schema, an
// older one the versioned updates it lacks. A database written by a newer
// server is refused.
func preparePostgres(ctx context.Context, raw string, logger log.Logger) (pgStores, error) {
	s, err := parsePostgres(raw)
	if err != nil {
		return s, err
	}
	for _, db := range []struct {
		cfg  *config.SQL
		kind sqlplugin.DbKind
		dir  string
	}{
		{s.main, sqlplugin.DbKindMain, "postgresql/v12/temporal"},
		{s.visibility, sqlplugin.DbKindVisibility, "postgresql/v12/visibility"},
	} {
		if err := createPostgresDatabase(ctx, raw, db.cfg.DatabaseName); err != nil {
			return s, fmt.Errorf("creating database %s on %s: %w", db.cfg.DatabaseName, s.server, err)
		}
		if err := migrateSchema(db.cfg, db.kind, db.dir, logger); err != nil {
			return s, fmt.Errorf("schema of database %s on %s: %w", db.cfg.DatabaseName, s.server, err)
		}
	}
	return s, nil
}

// createPostgresDatabase creates name unless it exists, looking first so that a
// user without CREATEDB may use databases made for it.
func createPostgresDatabase(ctx context.Context, raw, name string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("temporal database URL: not a URL")
	}
	u.Path = "/" + MaintenanceDatabase
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return fmt.Errorf("connecting to database %s: %w", MaintenanceDatabase, err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "42P04" {
		return nil // created meanwhile by another process
	}
	return err
}

// versionTables are the tables Temporal's schema tools keep the schema
// version in; a database holding only these has no schema yet.
var versionTables = []string{"schema_version", "schema_update_history"}

// migrateSchema brings one database to the schema version this server
// expects, recording each step in the version tables the way
// temporal-sql-tool does, so either can take over from the other.
func migrateSchema(cfg *config.SQL, kind sqlplugin.DbKind, dir string, logger log.Logger) error {
	db, err := sql.NewSQLAdminDB(kind, cfg, resolver.NewNoopResolver(), logger, metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer db.Close()
	want := db.ExpectedVersion()
	tables, err := db.ListTables(cfg.DatabaseName)
	if err != nil {
		return fmt.Errorf("listing tables: %w", err)
	}
	if !slices.ContainsFunc(tables, func(t string) bool { return !slices.Contains(versionTables, t) }) {
		if err := db.CreateSchemaVersionTables(); err != nil {
			return fmt.Errorf("creating the version tables: %w", err)
		}
		if err := execFile(db, path.Join(dir, "schema.sql")); err != nil {
			return err
		}
		if err := db.UpdateSchemaVersion(cfg.DatabaseName, want, want); err != nil {
			return fmt.Errorf("recording schema version %s: %w", want, err)
		}
		return db.WriteSchemaUpdateLog("0", want, "", "initial version")
	}
	have, err := db.ReadSchemaVersion(cfg.DatabaseName)
	if err != nil {
		return fmt.Errorf("it has tables but no Temporal schema version (%v): name a database of its own in the temporal database URL", err)
	}
	switch c := compareVersions(have, want); {
	case c == 0:
		return nil
	case c > 0:
		return fmt.Errorf("schema version %s is newer than %s, the version of this Temporal server (%s); use a newer ampflow", have, want, ServerVersion)
	}
	return updateSchema(db, cfg.DatabaseName, dir, have, want)
}

// manifest is a versioned schema directory's manifest.json.
type manifest struct {
	CurrVersion          string
	MinCompatibleVersion string
	Description          string
	SchemaUpdateCqlFiles []string
	dir                  string // the manifest's directory in the embedded schema
}

// updateSchema applies, in order, each versioned update after have up to want.
func updateSchema(db sqlplugin.AdminDB, name, dir, have, want string) error {
	versioned := path.Join(dir, "versioned")
	entries, err := fs.ReadDir(dbschemas.Assets(), versioned)
	if err != nil {
		return fmt.Errorf("reading embedded %s: %w", versioned, err)
	}
	var steps []manifest
	for _, e := range entries {
		raw, err := fs.ReadFile(dbschemas.Assets(), path.Join(versioned, e.Name(), "manifest.json"))
		if err != nil {
			return fmt.Errorf("reading embedded %s: %w", e.Name(), err)
		}
		var m manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("decoding embedded %s/manifest.json: %w", e.Name(), err)
		}
		if compareVersions(m.CurrVersion, have) > 0 && compareVersions(m.CurrVersion, want) <= 0 {
			m.dir = path.Join(versioned, e.Name())
			steps = append(steps, m)
		}
	}
	slices.SortFunc(steps, func(a, b manifest) int { return compareVersions(a.CurrVersion, b.CurrVersion) })
	for _, m := range steps {
		for _, f := range m.SchemaUpdateCqlFiles {
			if err := execFile(db, path.Join(m.dir, f)); err != nil {
				return err
			}
		}
		if err := db.UpdateSchemaVersion(name, m.CurrVersion, m.MinCompatibleVersion); err != nil {
			return fmt.Errorf("recording schema version %s: %w", m.CurrVersion, err)
		}
		if err := db.WriteSchemaUpdateLog(have, m.CurrVersion, "", m.Description); err != nil {
			return fmt.Errorf("logging schema update to %s: %w", m.CurrVersion, err)
		}
		have = m.CurrVersion
	}
	if have != want {
		return fmt.Errorf("the embedded updates end at version %s, not %s", have, want)
	}
	return nil
}

// execFile runs the statements of an embedded schema file.
func execFile(db sqlplugin.AdminDB, file string) error {
	raw, err := fs.ReadFile(dbschemas.Assets(), file)
	if err != nil {
		return fmt.Errorf("reading embedded %s: %w", file, err)
	}
	stmts, err := persistence.LoadAndSplitQueryFromReaders([]io.Reader{bytes.NewReader(raw)})
	if err != nil {
		return fmt.Errorf("splitting %s: %w", file, err)
	}
	for _, s := range stmts {
		if err := db.Exec(s); err != nil {
			return fmt.Errorf("running %s: %w", file, err)
		}
	}
	return nil
}

// compareVersions orders dotted schema versions such as 1.9 and 1.10;
// a part that is not a number counts as 0.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
