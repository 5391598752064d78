package ssot

import (
	"context"
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
