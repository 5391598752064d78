-- +goose Up
-- The keyword index takes the events a search has not seen yet as the
-- search begins (ssot.indexEvents), not one by one as they are stored:
-- each of a task's record batches wrote a segment of the index in its
-- transaction. mesh_fts_mark is the last event indexed.
DROP TRIGGER mesh_events_fts_insert;
CREATE TABLE mesh_fts_mark (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
);
INSERT INTO mesh_fts_mark (id, seq) SELECT 1, COALESCE(MAX(seq), 0) FROM mesh_events;

-- +goose Down
INSERT INTO mesh_events_fts (rowid, subject, content)
    SELECT seq, subject, content FROM mesh_events WHERE seq > (SELECT seq FROM mesh_fts_mark);
DROP TABLE mesh_fts_mark;
-- +goose StatementBegin
CREATE TRIGGER mesh_events_fts_insert AFTER INSERT ON mesh_events BEGIN
    INSERT INTO mesh_events_fts (rowid, subject, content) VALUES (new.seq, new.subject, new.content);
END;
-- +goose StatementEnd
