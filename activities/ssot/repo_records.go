package ssot

import (
	"context"
	"fmt"
	"strings"
)

// maxRepoRecords bounds RepoRecords' answer.
const maxRepoRecords = 1000

// RepoRecords lists the records of kind, in the chains of the tasks of
// repo, whose body holds contains: what the admins answered for a whole
// repository is read from the tasks' chains, where it was recorded, not
// kept anywhere else. At most maxRepoRecords, the latest first.
func (s *DB) RepoRecords(ctx context.Context, repo, kind, contains string) ([]Record, error) {
	if repo == "" || kind == "" || contains == "" {
		return nil, fmt.Errorf("reading a repository's records: repo, kind and the text are required")
	}
	like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(contains) + "%"
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT r.id, r.kind, r.body FROM records r JOIN tasks t ON t.task_id = r.task_id
		WHERE t.repo = ? AND r.kind = ? AND r.body LIKE ? ESCAPE '\' ORDER BY r.recorded_at DESC LIMIT `+fmt.Sprint(maxRepoRecords)),
		repo, kind, like)
	if err != nil {
		return nil, fmt.Errorf("reading the %s records of %s: %w", kind, repo, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var body string
		if err := rows.Scan(&r.ID, &r.Kind, &body); err != nil {
			return nil, fmt.Errorf("reading the %s records of %s: %w", kind, repo, err)
		}
		r.Body = []byte(body)
		out = append(out, r)
	}
	return out, rows.Err()
}
