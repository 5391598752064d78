package ssot

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations
var migrations embed.FS

// Engines.
const (
	EngineSQLite   = "sqlite"
	EnginePostgres = "postgres"
)

// DB is the store on a SQL database: Chains and every system's tables.
type DB struct {
	db     *sql.DB
	engine string
	// group commits SQLite's saves together; nil on PostgreSQL.
	group *groupWriter
	// stmts are the save path's statements, compiled once (SQLite).
	stmts stmts
	// chainKey keys the records' hashes (KeyChain); nil hashes them
	// with SHA-256 alone.
	chainKey []byte
	// messageHook is called after each write of a task message
	// (OnTaskMessage).
	messageHook atomic.Pointer[TaskMessageHook]
}

// KeyChain keys the hashes of the records the store writes and checks
// with ChainKey(decisionKey). Call it once, before the store is used;
// every process that writes or verifies the store's records must give it
// the same decision key.
func (s *DB) KeyChain(decisionKey []byte) { s.chainKey = ChainKey(decisionKey) }

// Keyed says whether KeyChain gave the store its key.
func (s *DB) Keyed() bool { return s.chainKey != nil }

// Open opens the store at url and brings its schema up to date.
// A postgres:// or postgresql:// URL is PostgreSQL; anything else is a
// SQLite file path (an optional sqlite:// prefix is dropped), created
// when missing.
func Open(ctx context.Context, url string) (*DB, error) {
	engine, dsn, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	driver := "pgx"
	if engine == EngineSQLite {
		driver = "sqlite"
		if err := PrivateDatabase(sqlitePath(dsn)); err != nil {
			return nil, fmt.Errorf("opening the SSOT (%s): %w", engine, err)
		}
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the SSOT (%s): %w", engine, err)
	}
	// Connections are kept, not reopened for each burst of reads beyond
	// database/sql's default of two idle ones: opening one costs a
	// SQLite connection its pragmas and schema parse, a PostgreSQL one a
	// round of authentication.
	if engine == EngineSQLite {
		// One writer at a time in SQLite; readers run beside it in WAL mode.
		db.SetMaxOpenConns(sqliteConns)
		db.SetMaxIdleConns(sqliteConns)
	} else {
		db.SetMaxOpenConns(postgresConns)
		db.SetMaxIdleConns(postgresIdleConns)
	}
	s := &DB{db: db, engine: engine}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if engine == EngineSQLite {
		s.group = newGroupWriter(s)
	}
	return s, nil
}

// Connection pool sizes: SQLite's open connections (all kept idle); the
// PostgreSQL connections one process opens at most (a burst waits for
// one rather than passing the server's max_connections, 100 by default,
// with a few workers sharing it) and keeps idle between bursts.
const (
	sqliteConns       = 8
	postgresConns     = 32
	postgresIdleConns = 16
)

// Engine is EngineSQLite or EnginePostgres.
func (s *DB) Engine() string { return s.engine }

// Close closes the database.
func (s *DB) Close() error {
	if s.group != nil {
		s.group.close()
	}
	s.closeStmts()
	return s.db.Close()
}

// sqlitePath is the file of a SQLite DSN parseURL made.
func sqlitePath(dsn string) string {
	p, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	return p
}

func parseURL(raw string) (engine, dsn string, err error) {
	switch {
	case raw == "":
		return "", "", &InvalidError{"ssot.url", "is required: a SQLite file path or a postgres:// URL"}
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if _, err := url.Parse(raw); err != nil {
			return "", "", &InvalidError{"ssot.url", "is not a valid postgres:// URL"}
		}
		return EnginePostgres, raw, nil
	}
	path := strings.TrimPrefix(raw, "sqlite://")
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", fmt.Errorf("ssot.url %s: %w", raw, err)
	}
	// WAL lets readers run beside the writer; synchronous=FULL syncs the
	// WAL on every commit, so a record is on disk before the workflow
	// moves past it, power cut included. Write transactions take the
	// lock when they begin, so two writers wait for each other rather
	// than fail on the upgrade from reading to writing. temp_store=MEMORY
	// keeps a statement's journal in small chunks of memory: otherwise
	// SQLite gives it 64 KiB at once, which the Go SQLite maps and unmaps
	// (mmap, munmap) for every statement of a transaction that may fail
	// part way.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Add("_txlock", "immediate")
	return EngineSQLite, "file:" + abs + "?" + q.Encode(), nil
}

func (s *DB) migrate(ctx context.Context) error {
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if s.engine == EnginePostgres {
		dialect = goose.DialectPostgres
		// Workers starting together take turns.
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return fmt.Errorf("migrating the SSOT schema: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	dir, err := fs.Sub(migrations, "migrations/"+s.engine)
	if err != nil {
		return fmt.Errorf("migrating the SSOT schema: %w", err)
	}
	p, err := goose.NewProvider(dialect, s.db, dir, append(opts, goose.WithTableName("ssot_schema"))...)
	if err != nil {
		return fmt.Errorf("migrating the SSOT schema: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrating the SSOT schema (%s): %w", s.engine, err)
	}
	return nil
}

// rebind turns the ? placeholders of a query into PostgreSQL's $n.
func (s *DB) rebind(q string) string {
	if s.engine != EnginePostgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// raced reports whether err is a write that lost to a concurrent one on a
// unique key or a lock, so the transaction is worth running again.
func raced(err error) bool {
	if errors.Is(err, errLostRace) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505" || pg.Code == "40001" || pg.Code == "40P01"
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_BUSY:
			return true
		}
	}
	return false
}
