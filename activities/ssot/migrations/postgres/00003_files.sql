-- +goose Up
-- files: what a task keeps beside its records, read by any worker: a
-- result's diff for the reviewer, a CI run's result and log.
CREATE TABLE files (
    task_id   TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    stored_at BIGINT  NOT NULL, -- microseconds since the Unix epoch, UTC
    body      BYTEA   NOT NULL,
    PRIMARY KEY (task_id, name)
);

-- +goose Down
DROP TABLE files;
