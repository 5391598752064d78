package devserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/headers"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives/timestamp"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

const (
	// DatabaseFile is the name of the SQLite database inside Options.DataDir.
	DatabaseFile = "temporal.db"
	// VersionFile is the name of the file inside Options.DataDir that records
	// which Temporal server version wrote the database.
	VersionFile = "temporal.version"
)

// ServerVersion is the version of the embedded Temporal server.
const ServerVersion = headers.ServerVersion

// ErrVersionMismatch is wrapped by the error Start returns when the database
// was written by another Temporal server version.
var ErrVersionMismatch = errors.New("temporal database version mismatch")

// sqlConfig returns the persistence settings for the database at path.
func sqlConfig(path string) *config.SQL {
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: path,
		// With WAL and synchronous=normal a commit is one append to the
		// log: still durable when the process is killed, which is what
		// ampflow dev promises (a power cut may lose the last commits).
		// One connection, as before: Temporal's transactions upgrade
		// from read to write, which concurrent SQLite connections turn
		// into "database is locked".
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "normal",
		},
	}
}

// prepareStore makes sure dir, which must exist, holds a database this server version can open,
// with the namespace registered. A new database gets the schema, the
// namespace and its search attributes; an existing one only gets the
// namespace if it is missing.
func prepareStore(dir, cluster, namespace string, retention time.Duration, attrs map[string]enums.IndexedValueType) (*config.SQL, error) {
	dbPath := filepath.Join(dir, DatabaseFile)
	versionPath := filepath.Join(dir, VersionFile)

	switch _, err := os.Stat(dbPath); {
	case err == nil:
		if err := checkVersion(versionPath); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrNotExist):
		if err := createDatabase(dbPath, versionPath); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("checking database %s: %w", dbPath, err)
	}

	if err := privateDatabase(dbPath); err != nil {
		return nil, err
	}
	ns, err := sqliteschema.NewNamespaceConfig(cluster, namespace, false, attrs)
	if err != nil {
		return nil, fmt.Errorf("configuring namespace %s: %w", namespace, err)
	}
	ns.Detail.Config.Retention = timestamp.DurationPtr(retention)
	cfg := sqlConfig(dbPath)
	if err := sqliteschema.CreateNamespaces(cfg, ns); err != nil {
		return nil, fmt.Errorf("registering namespace %s in %s: %w", namespace, dbPath, err)
	}
	return cfg, nil
}

// checkVersion refuses a database whose version file names another server
// version, or that has no version file at all: SQLite databases are not
// migrated here, so opening one written by another version could corrupt it.
func checkVersion(versionPath string) error {
	b, err := os.ReadFile(versionPath)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is missing, so the version that wrote the database beside it is unknown (this is Temporal server %s); move the data directory away to start afresh",
			ErrVersionMismatch, versionPath, ServerVersion)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", versionPath, err)
	}
	if got := strings.TrimSpace(string(b)); got != ServerVersion {
		return fmt.Errorf("%w: the database was written by Temporal server %s, according to %s, but this is Temporal server %s; there is no SQLite migration, so move the data directory away to start afresh",
			ErrVersionMismatch, got, versionPath, ServerVersion)
	}
	return nil
}

// createDatabase builds the schema in a scratch file and renames it into
// place, so a crash half way never leaves a database that looks complete.
// The version file is written first for the same reason: a database never
// exists without one.
func createDatabase(dbPath, versionPath string) error {
	if err := writeFileAtomic(versionPath, []byte(ServerVersion+"\n")); err != nil {
		return err
	}
	scratch := dbPath + ".init"
	removeDatabase(scratch)
	// The scratch file keeps the default rollback journal: a WAL beside it
	// would not follow the rename.
	if err := sqliteschema.SetupSchema(&config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: scratch,
		ConnectAttributes: map[string]string{"mode": "rwc"}}); err != nil {
		removeDatabase(scratch)
		return fmt.Errorf("creating schema in %s: %w", scratch, err)
	}
	if err := os.Rename(scratch, dbPath); err != nil {
		removeDatabase(scratch)
		return fmt.Errorf("moving new database into %s: %w", dbPath, err)
	}
	return nil
}

// privateDatabase makes the database at path and its journals readable
// by their owner only: whoever reads them reads every workflow.
func privateDatabase(path string) error {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		if err := os.Chmod(path+suffix, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("making %s private: %w", path+suffix, err)
		}
	}
	return nil
}

func removeDatabase(path string) {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		_ = os.Remove(path + suffix)
	}
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
