package ssot

import (
	"context"
	"database/sql"
	"sync"
)

// stmts keeps the SQLite statements a save runs, compiled once per
// connection. SQLite's driver compiles a query's text on every plain
// Exec; in `ampflow bench` that parsing was about a third of the
// store's CPU time on the save path (BENCHMARKS.md). A statement
// prepared on the database is reused by every transaction on a
// connection it was compiled on. PostgreSQL's driver keeps its own
// cache of prepared statements, so it runs the text as is.
type stmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// prepared returns q prepared on the database, preparing it the first
// time; nil on PostgreSQL.
func (s *DB) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if s.engine == EnginePostgres {
		return nil, nil
	}
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if st := s.stmts.m[q]; st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if s.stmts.m == nil {
		s.stmts.m = map[string]*sql.Stmt{}
	}
	s.stmts.m[q] = st
	return st, nil
}

// txExec runs q (with ? placeholders) in tx.
func (s *DB) txExec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return tx.ExecContext(ctx, s.rebind(q), args...)
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// txQuery runs the query q (with ? placeholders) in tx.
func (s *DB) txQuery(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return tx.QueryContext(ctx, s.rebind(q), args...)
	}
	return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
}

// txQueryRow runs the query q (with ? placeholders) in tx for one row.
func (s *DB) txQueryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	st, err := s.prepared(ctx, q)
	if err != nil || st == nil {
		// A failed prepare fails the query the same way, with its error.
		return tx.QueryRowContext(ctx, s.rebind(q), args...)
	}
	return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
}

// closeStmts closes the kept statements.
func (s *DB) closeStmts() {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	for _, st := range s.stmts.m {
		st.Close()
	}
	s.stmts.m = nil
}
