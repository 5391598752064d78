-- +goose Up
-- records: every message, ACK, escalation, decision and refusal of a task,
-- in the order it was written, each row chained to the one before.
CREATE TABLE records (
    task_id     TEXT    NOT NULL,
    seq         BIGINT NOT NULL,
    id          TEXT    NOT NULL UNIQUE,
    kind        TEXT    NOT NULL,
    recorded_at BIGINT NOT NULL, -- microseconds since the Unix epoch, UTC
    digest      TEXT    NOT NULL DEFAULT '',
    body        TEXT    NOT NULL,
    body_hash   TEXT    NOT NULL,
    prev_hash   TEXT    NOT NULL,
    hash        TEXT    NOT NULL,
    PRIMARY KEY (task_id, seq)
);

-- chains: the head of each task's chain, moved in the transaction that
-- appends, so a deleted last row is seen and concurrent appends serialize.
CREATE TABLE chains (
    task_id TEXT    NOT NULL PRIMARY KEY,
    seq     BIGINT NOT NULL,
    hash    TEXT    NOT NULL
);

-- errors: input refused at an entry point, kept for the operator.
CREATE TABLE errors (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    recorded_at BIGINT NOT NULL,
    source      TEXT    NOT NULL,
    task_id     TEXT    NOT NULL DEFAULT '',
    reason      TEXT    NOT NULL,
    raw         TEXT    NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE errors;
DROP TABLE chains;
DROP TABLE records;
