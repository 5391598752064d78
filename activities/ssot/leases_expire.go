package ssot

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// LeaseChange is one compare-and-set of a lease held directly in the
// store: Lease as it becomes, at the version From it was read at, with
// the events of the change.
type LeaseChange struct {
	Lease  MeshLease
	From   int64
	Events []MeshEvent
}

// CompareLeases applies changes in one transaction, each as CompareLease
// does, and answers which were written (or had been, by a retry).
func (s *DB) CompareLeases(ctx context.Context, changes []LeaseChange) ([]bool, error) {
	var ok []bool
	err := s.meshTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		ok = make([]bool, len(changes))
		for i, c := range changes {
			var err error
			if ok[i], err = s.compareTx(ctx, tx, c); err != nil {
				return fmt.Errorf("lease %s: %w", c.Lease.LeaseID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("changing %d leases: %w", len(changes), err)
	}
	return ok, nil
}

// DueLeases lists, in order of expiry, up to limit active leases held
// directly in the store whose expiry is at or before cutoff: the ones the
// lease sweeper ends. (The state is a literal, so PostgreSQL's plan may
// use the partial index mesh_leases_direct_expiry.) Leases that lease workflows hold are not listed;
// their workflows end them.
func (s *DB) DueLeases(ctx context.Context, cutoff time.Time, limit int) ([]MeshLease, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+leaseColumns+` FROM mesh_leases
		WHERE state = 'active' AND in_workflow = 0 AND expires_at <= ? ORDER BY expires_at, lease_id LIMIT ?`),
		micros(cutoff), limit)
	if err != nil {
		return nil, fmt.Errorf("listing leases due by %s: %w", cutoff, err)
	}
	defer rows.Close()
	var out []MeshLease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, fmt.Errorf("listing leases due by %s: %w", cutoff, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing leases due by %s: %w", cutoff, err)
	}
	return out, nil
}

// NextLeaseExpiry is the earliest expiry of the active leases held
// directly in the store; zero when there are none.
func (s *DB) NextLeaseExpiry(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT MIN(expires_at) FROM mesh_leases
		WHERE state = 'active' AND in_workflow = 0`)).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("reading the next lease expiry: %w", err)
	}
	if !next.Valid {
		return time.Time{}, nil
	}
	return fromMicros(next.Int64), nil
}
