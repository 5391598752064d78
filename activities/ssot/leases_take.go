package ssot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// A key's active lease is held either directly in the store, taken by
// TakeLease when no lease of the key was active, or by the key's lease
// workflow. The version is the holder's token: a direct holder changes its
// lease with CompareLease at the version it last wrote, and a lease
// workflow that finds the key held adopts the lease (TakeLease with adopt)
// by raising its version, so the direct holder's next change fails and
// goes through the workflow.

// TakeLease writes l, a new active lease, with its events, when no lease of
// l.ResourceKey is active, and answers it with taken true: held directly
// in the store, or with adopt (the key's lease workflow taking it) held by
// the workflow (InWorkflow). A key already
// held by l.AgentID answers that lease, taken true, and writes nothing: a
// retried take finds its own lease. A key held by another answers the
// holder's lease, taken false; with adopt, that lease's version is raised
// first, in the same transaction, and answered raised.
func (s *DB) TakeLease(ctx context.Context, l MeshLease, events []MeshEvent, adopt bool) (MeshLease, bool, error) {
	if err := checkID("lease_id", l.LeaseID); err != nil {
		return MeshLease{}, false, err
	}
	var (
		held  MeshLease
		taken bool
	)
	err := s.meshTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		taken = false
		if s.engine == EnginePostgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "lease:"+l.ResourceKey); err != nil {
				return err
			}
		}
		row := tx.QueryRowContext(ctx, s.rebind(`SELECT `+leaseColumns+` FROM mesh_leases
			WHERE state = ? AND resource_key = ? ORDER BY version DESC LIMIT 1`), "active", l.ResourceKey)
		cur, err := scanLease(row)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case cur.LeaseID == l.LeaseID || (cur.AgentID == l.AgentID && !adopt):
			held, taken = cur, true
			return nil
		case !adopt:
			held = cur
			return nil
		default:
			if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE mesh_leases SET version = version + 1, in_workflow = 1 WHERE lease_id = ?`), cur.LeaseID); err != nil {
				return err
			}
			cur.Version++
			cur.InWorkflow = true
			held = cur
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO mesh_leases (`+leaseColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			l.LeaseID, l.ResourceKey, l.AgentID, l.State, l.TTLSeconds, micros(l.AcquiredAt), micros(l.ExpiresAt),
			micros(l.LastHeartbeat), zeroMicros(l.ReleasedAt), l.Reason, l.Version, boolInt(adopt)); err != nil {
			return err
		}
		for _, e := range events {
			if _, err := s.appendEvent(ctx, tx, e); err != nil {
				return err
			}
		}
		l.InWorkflow = adopt
		held, taken = l, true
		return nil
	})
	if err != nil {
		return MeshLease{}, false, fmt.Errorf("taking %s for %s: %w", l.ResourceKey, l.AgentID, err)
	}
	return held, taken, nil
}

// CompareLease writes l, a change of an active lease held directly in
// the store, with its events, when the stored lease is still active at
// version from; l.Version is the version it becomes. It answers false,
// writing nothing, when the lease has changed meanwhile (a lease workflow
// adopted it, or it ended). A change already written (a retry) answers
// true.
func (s *DB) CompareLease(ctx context.Context, l MeshLease, from int64, events []MeshEvent) (bool, error) {
	var ok bool
	err := s.meshTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		ok, err = s.compareTx(ctx, tx, LeaseChange{Lease: l, From: from, Events: events})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("changing lease %s: %w", l.LeaseID, err)
	}
	return ok, nil
}

func (s *DB) compareTx(ctx context.Context, tx *sql.Tx, c LeaseChange) (bool, error) {
	l := c.Lease
	res, err := tx.ExecContext(ctx, s.rebind(`UPDATE mesh_leases SET state = ?, ttl_seconds = ?, expires_at = ?,
		last_heartbeat = ?, released_at = ?, reason = ?, version = ?
		WHERE lease_id = ? AND version = ? AND state = ?`),
		l.State, l.TTLSeconds, micros(l.ExpiresAt), micros(l.LastHeartbeat), zeroMicros(l.ReleasedAt), l.Reason,
		l.Version, l.LeaseID, c.From, "active")
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if n == 0 {
		cur, err := scanLease(tx.QueryRowContext(ctx, s.rebind(`SELECT `+leaseColumns+` FROM mesh_leases WHERE lease_id = ?`), l.LeaseID))
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// An adoption raises the version too, but keeps the times.
		return cur.State == l.State && cur.Version == l.Version && micros(cur.LastHeartbeat) == micros(l.LastHeartbeat) &&
			zeroMicros(cur.ReleasedAt) == zeroMicros(l.ReleasedAt), nil
	}
	for _, e := range c.Events {
		if _, err := s.appendEvent(ctx, tx, e); err != nil {
			return false, err
		}
	}
	return true, nil
}
