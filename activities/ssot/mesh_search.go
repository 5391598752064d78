package ssot

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode"
)

// Keywords splits a search into its words: letters and digits, lower
// case, at most MaxKeywords.
func Keywords(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) > MaxKeywords {
		words = words[:MaxKeywords]
	}
	return words
}

// SearchEvents lists events matching q, newest first; the cursor is the
// last event's seq.
func (s *DB) SearchEvents(ctx context.Context, q SearchQuery, p Page) ([]MeshEvent, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	where := `WHERE 1 = 1`
	var args []any
	for _, f := range []struct{ col, v string }{{"sender", q.From}, {"recipient", q.To}, {"type", q.Type}, {"task_id", q.TaskID}} {
		if f.v != "" {
			where += ` AND e.` + f.col + ` = ?`
			args = append(args, f.v)
		}
	}
	if n := len(q.Viewers); n > 0 {
		in := placeholders(n)
		where += ` AND (e.recipient IN (?, '') OR e.sender IN (` + in + `) OR e.sender_id IN (` + in + `) OR e.agent_id IN (` + in + `)
			OR EXISTS (SELECT 1 FROM mesh_deliveries d WHERE d.recipient IN (` + in + `) AND d.seq = e.seq))`
		args = append(args, Broadcast)
		for range 4 {
			for _, v := range q.Viewers {
				args = append(args, v)
			}
		}
	}
	if !q.Since.IsZero() {
		where += ` AND e.created_at >= ?`
		args = append(args, micros(q.Since))
	}
	if !q.Until.IsZero() {
		where += ` AND e.created_at < ?`
		args = append(args, micros(q.Until))
	}
	if words := Keywords(q.Q); len(words) > 0 {
		if s.engine == EnginePostgres {
			// The match first, from the GIN index, as an array the
			// planner cannot reorder: its guess of a match's rows is poor,
			// and an index read in seq order with the match checked per
			// row was ten times slower (with an agent's visibility, 25
			// times).
			where += ` AND e.seq = ANY(ARRAY(SELECT seq FROM mesh_events WHERE search @@ to_tsquery('simple', ?)))`
			args = append(args, strings.Join(words, " & "))
		} else {
			if err := s.indexEvents(ctx); err != nil {
				return nil, "", err
			}
			quoted := make([]string, len(words))
			for i, w := range words {
				quoted[i] = `"` + w + `"`
			}
			where += ` AND e.seq IN (SELECT rowid FROM mesh_events_fts WHERE mesh_events_fts MATCH ?)`
			args = append(args, strings.Join(quoted, " "))
		}
	}
	where, args, err = pageBy(where, args, p.Cursor, true, limit)
	if err != nil {
		return nil, "", err
	}
	evs, err := s.events(ctx, s.db, where, args...)
	if err != nil {
		return nil, "", fmt.Errorf("searching events: %w", err)
	}
	return nextPage(evs, limit)
}

// indexEvents brings SQLite's keyword index up to the last stored event
// before a search reads it: the events stored since the index's mark
// (mesh_fts_mark, migration 00017) are indexed in one transaction. An
// event is not indexed as it is stored, where each of a task's record
// batches wrote a segment of the index in its transaction; searches are
// far fewer than batches. A search with nothing new to index only reads.
func (s *DB) indexEvents(ctx context.Context) error {
	var mark, last int64
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT seq FROM mesh_fts_mark), (SELECT COALESCE(MAX(seq), 0) FROM mesh_events)`).Scan(&mark, &last)
	if err != nil {
		return fmt.Errorf("reading the keyword index's mark: %w", err)
	}
	if last <= mark {
		return nil
	}
	err = s.meshTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := s.txExec(ctx, tx, `INSERT INTO mesh_events_fts (rowid, subject, content)
			SELECT seq, subject, content FROM mesh_events WHERE seq > (SELECT seq FROM mesh_fts_mark) ORDER BY seq`); err != nil {
			return err
		}
		_, err := s.txExec(ctx, tx, `UPDATE mesh_fts_mark SET seq = (SELECT COALESCE(MAX(seq), 0) FROM mesh_events)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("indexing events for a search: %w", err)
	}
	return nil
}
