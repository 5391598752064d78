-- +goose Up
-- files: what a task keeps beside its records, read by any worker: a
-- result's diff for the reviewer, a CI run's result and log.
CREATE TABLE files (
    task_id   TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    stored_at INTEGER NOT NULL, -- microseconds since the Unix epoch, UTC
    body      BLOB    NOT NULL,
    PRIMARY KEY (task_id, name)
);

-- +goose Down
DROP TABLE files;
