package ssot

import (
	"context"
	"fmt"
	"time"
)

// MaxLeaseTTL bounds a lease's time to live.
const MaxLeaseTTL = time.Hour

// Leases are read against the database's clock alone: a lease's expiry
// is written as the database's now plus the TTL and compared with the
// database's now, so whether a holder's lease has run out never depends
// on two workers' clocks agreeing. A holder then counts the TTL on its
// own monotonic clock from before it asked, which ends no later than the
// database's expiry (clock rates differ by far less than a TTL's third).
// PostgreSQL's clock_timestamp() is the server's clock at the statement;
// a SQLite file is on one machine, so its clock is that machine's.
func (s *DB) nowMicrosSQL() string {
	if s.engine == EnginePostgres {
		return `(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT`
	}
	return `CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)`
}

// Acquire takes the lease name for holder for ttl, when it is free,
// expired or held by holder already (a renewal), and reports whether
// holder holds it now.
func (s *DB) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if err := checkID("lease name", name); err != nil {
		return false, err
	}
	if err := checkID("lease holder", holder); err != nil {
		return false, err
	}
	if ttl <= 0 || ttl > MaxLeaseTTL {
		return false, &InvalidError{"lease ttl", fmt.Sprintf("must be more than 0 and at most %s", MaxLeaseTTL)}
	}
	now := s.nowMicrosSQL()
	// One statement: the insert or the take-over is atomic on both
	// engines, so of two racing holders exactly one gets a row back.
	rows, err := s.db.QueryContext(ctx, s.rebind(`INSERT INTO leases (name, holder, expires_at)
		VALUES (?, ?, `+now+` + ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at <= `+now+`
		RETURNING holder`), name, holder, ttl.Microseconds())
	if err != nil {
		return false, fmt.Errorf("acquiring lease %s for %s: %w", name, holder, err)
	}
	defer rows.Close()
	held := rows.Next()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("acquiring lease %s for %s: %w", name, holder, err)
	}
	return held, nil
}

// Release gives up holder's lease name at once, so another holder need
// not wait for it to expire. A lease held by another is left alone.
func (s *DB) Release(ctx context.Context, name, holder string) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM leases WHERE name = ? AND holder = ?`), name, holder); err != nil {
		return fmt.Errorf("releasing lease %s of %s: %w", name, holder, err)
	}
	return nil
}

// LeaseHolder names who holds the lease name now; empty when nobody does
// (never taken, released or expired).
func (s *DB) LeaseHolder(ctx context.Context, name string) (string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT holder FROM leases WHERE name = ? AND expires_at > `+s.nowMicrosSQL()), name)
	if err != nil {
		return "", fmt.Errorf("reading lease %s: %w", name, err)
	}
	defer rows.Close()
	var holder string
	if rows.Next() {
		if err := rows.Scan(&holder); err != nil {
			return "", fmt.Errorf("reading lease %s: %w", name, err)
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("reading lease %s: %w", name, err)
	}
	return holder, nil
}
