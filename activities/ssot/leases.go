package ssot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// MeshLease is a lease as its holder last wrote it: a lease workflow
// (see workflows/lease), or a task that took its free branch directly
// (TakeLease). The store answers listings, and the active row of a key
// decides who may take it without its workflow.
type MeshLease struct {
	LeaseID       string
	ResourceKey   string
	AgentID       string
	State         string
	TTLSeconds    int
	AcquiredAt    time.Time
	ExpiresAt     time.Time
	LastHeartbeat time.Time
	// ReleasedAt is zero while the lease is active.
	ReleasedAt time.Time
	Reason     string
	Version    int64
	// InWorkflow is set on a lease its key's lease workflow holds; the
	// others are held directly in the store (TakeLease) and ended at
	// their expiry by the lease sweeper (DueLeases).
	InWorkflow bool
}

// LeaseFilter narrows a lease listing; empty fields match all.
type LeaseFilter struct {
	AgentID string
	State   string
}

// RecordLease writes a lease its lease workflow holds (InWorkflow is
// set) and the events of its change in one transaction. A lease stored with a version as high or higher is left
// as it is (a late or repeated write); events stored already are kept.
func (s *DB) RecordLease(ctx context.Context, l MeshLease, events []MeshEvent) error {
	if err := checkID("lease_id", l.LeaseID); err != nil {
		return err
	}
	err := s.meshTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO mesh_leases (lease_id, resource_key, agent_id, state,
			ttl_seconds, acquired_at, expires_at, last_heartbeat, released_at, reason, version, in_workflow)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
			ON CONFLICT (lease_id) DO UPDATE SET state = excluded.state, ttl_seconds = excluded.ttl_seconds,
				expires_at = excluded.expires_at, last_heartbeat = excluded.last_heartbeat,
				released_at = excluded.released_at, reason = excluded.reason, version = excluded.version,
				in_workflow = 1
			WHERE mesh_leases.version < excluded.version`),
			l.LeaseID, l.ResourceKey, l.AgentID, l.State, l.TTLSeconds, micros(l.AcquiredAt), micros(l.ExpiresAt),
			micros(l.LastHeartbeat), zeroMicros(l.ReleasedAt), l.Reason, l.Version); err != nil {
			return err
		}
		for _, e := range events {
			if _, err := s.appendEvent(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording lease %s: %w", l.LeaseID, err)
	}
	return nil
}

const leaseColumns = `lease_id, resource_key, agent_id, state, ttl_seconds, acquired_at, expires_at,
	last_heartbeat, released_at, reason, version, in_workflow`

func scanLease(rows interface{ Scan(...any) error }) (MeshLease, error) {
	var (
		l                                MeshLease
		acquired, expires, beat, release int64
		inWorkflow                       int64
	)
	if err := rows.Scan(&l.LeaseID, &l.ResourceKey, &l.AgentID, &l.State, &l.TTLSeconds, &acquired, &expires,
		&beat, &release, &l.Reason, &l.Version, &inWorkflow); err != nil {
		return MeshLease{}, err
	}
	l.InWorkflow = inWorkflow != 0
	l.AcquiredAt, l.ExpiresAt, l.LastHeartbeat = fromMicros(acquired), fromMicros(expires), fromMicros(beat)
	if release != 0 {
		l.ReleasedAt = fromMicros(release)
	}
	return l, nil
}

// Lease is one lease by id.
func (s *DB) Lease(ctx context.Context, leaseID string) (MeshLease, error) {
	row := s.db.QueryRowContext(ctx, s.rebind(`SELECT `+leaseColumns+` FROM mesh_leases WHERE lease_id = ?`), leaseID)
	l, err := scanLease(row)
	if errors.Is(err, sql.ErrNoRows) {
		return MeshLease{}, fmt.Errorf("lease %s: %w", leaseID, ErrNotFound)
	}
	if err != nil {
		return MeshLease{}, fmt.Errorf("reading lease %s: %w", leaseID, err)
	}
	return l, nil
}

// Leases lists leases newest first.
func (s *DB) Leases(ctx context.Context, f LeaseFilter, p Page) ([]MeshLease, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	q := `SELECT ` + leaseColumns + ` FROM mesh_leases WHERE 1 = 1`
	var args []any
	if f.AgentID != "" {
		q += ` AND agent_id = ?`
		args = append(args, f.AgentID)
	}
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, f.State)
	}
	if p.Cursor != "" {
		acq, id, err := splitCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (acquired_at < ? OR (acquired_at = ? AND lease_id < ?))`
		args = append(args, acq, acq, id)
	}
	q += ` ORDER BY acquired_at DESC, lease_id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, "", fmt.Errorf("listing leases: %w", err)
	}
	defer rows.Close()
	var out []MeshLease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, "", fmt.Errorf("listing leases: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("listing leases: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = strconv.FormatInt(micros(last.AcquiredAt), 10) + "_" + last.LeaseID
	}
	return out, next, nil
}

func splitCursor(c string) (int64, string, error) {
	for i := 0; i < len(c); i++ {
		if c[i] == '_' {
			n, err := strconv.ParseInt(c[:i], 10, 64)
			if err == nil {
				return n, c[i+1:], nil
			}
			break
		}
	}
	return 0, "", &InvalidError{"cursor", "is not a cursor this listing returned"}
}
