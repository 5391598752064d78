package ssot

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Host is one runner host of the fleet as it last wrote itself: its
// slots and, as JSON, its runs and queue.
type Host struct {
	Host      string          `json:"host"`
	Slots     int             `json:"slots"`
	Runs      json.RawMessage `json:"runs"`
	StartedAt time.Time       `json:"started_at"`
	SeenAt    time.Time       `json:"seen_at"`
}

// SaveHost writes h over the host's last row.
func (s *DB) SaveHost(ctx context.Context, h Host) error {
	if err := checkID("host", h.Host); err != nil {
		return err
	}
	if !json.Valid(h.Runs) {
		return fmt.Errorf("host %s: runs are not JSON", h.Host)
	}
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO fleet_hosts (host, slots, runs, started_at, seen_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (host) DO UPDATE SET slots = excluded.slots, runs = excluded.runs, started_at = excluded.started_at, seen_at = excluded.seen_at`),
		h.Host, h.Slots, string(h.Runs), micros(h.StartedAt), micros(h.SeenAt))
	if err != nil {
		return fmt.Errorf("writing host %s: %w", h.Host, err)
	}
	return nil
}

// Hosts reads the hosts seen at or after since, by name.
func (s *DB) Hosts(ctx context.Context, since time.Time) ([]Host, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT host, slots, runs, started_at, seen_at FROM fleet_hosts WHERE seen_at >= ? ORDER BY host`), micros(since))
	if err != nil {
		return nil, fmt.Errorf("reading the fleet: %w", err)
	}
	defer rows.Close()
	hosts := []Host{}
	for rows.Next() {
		var h Host
		var runs string
		var started, seen int64
		if err := rows.Scan(&h.Host, &h.Slots, &runs, &started, &seen); err != nil {
			return nil, fmt.Errorf("reading the fleet: %w", err)
		}
		h.Runs, h.StartedAt, h.SeenAt = json.RawMessage(runs), fromMicros(started), fromMicros(seen)
		hosts = append(hosts, h)
	}
	return hosts, rows.Err()
}
