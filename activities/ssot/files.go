package ssot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// MaxFileSize bounds a file kept beside a task's records.
const MaxFileSize = 64 << 20

// PutFile implements Chains.
func (s *DB) PutFile(ctx context.Context, taskID, name string, data []byte) error {
	if err := checkID("task_id", taskID); err != nil {
		return err
	}
	if err := checkID("name", name); err != nil {
		return err
	}
	if len(data) > MaxFileSize {
		return &InvalidError{"data", fmt.Sprintf("is %d bytes, more than the %d a file may hold", len(data), MaxFileSize)}
	}
	if data == nil {
		data = []byte{}
	}
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO files (task_id, name, stored_at, body) VALUES (?, ?, ?, ?)
		ON CONFLICT (task_id, name) DO UPDATE SET stored_at = excluded.stored_at, body = excluded.body`),
		taskID, name, micros(time.Now()), data)
	if err != nil {
		return fmt.Errorf("keeping file %s of task %s: %w", name, taskID, err)
	}
	return nil
}

// File implements Chains.
func (s *DB) File(ctx context.Context, taskID, name string) ([]byte, error) {
	if err := checkID("task_id", taskID); err != nil {
		return nil, err
	}
	if err := checkID("name", name); err != nil {
		return nil, err
	}
	var data []byte
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT body FROM files WHERE task_id = ? AND name = ?`), taskID, name).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("file %s of task %s: %w", name, taskID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading file %s of task %s: %w", name, taskID, err)
	}
	return data, nil
}
