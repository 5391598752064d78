-- +goose Up
-- The read side: each task's latest state, the messages waiting in agents'
-- inboxes and the open decisions, replaced in the transaction that appends
-- the records they follow from, so a listing is one indexed query.
-- reject_count lets task listings show each task's rejected reviews
-- without reading its whole state.
CREATE TABLE tasks (
    task_id    TEXT    NOT NULL PRIMARY KEY,
    rev        BIGINT NOT NULL, -- the writer's state counter: older states never replace newer
    status     TEXT    NOT NULL,
    risk       TEXT    NOT NULL DEFAULT '',
    repo       TEXT    NOT NULL DEFAULT '',
    reject_count INTEGER NOT NULL DEFAULT 0,
    started_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    state      TEXT    NOT NULL
);
CREATE INDEX tasks_by_start ON tasks (started_at DESC, task_id DESC);
CREATE INDEX tasks_by_status ON tasks (status, started_at DESC, task_id DESC);

CREATE TABLE outbox (
    msg_id  TEXT    NOT NULL PRIMARY KEY,
    task_id TEXT    NOT NULL,
    role    TEXT    NOT NULL,
    type    TEXT    NOT NULL,
    sent_at BIGINT NOT NULL,
    body    TEXT    NOT NULL,
    -- holder is the agent (token name) that ACKed the message and has not
    -- answered it yet; '' while it awaits an ACK.
    holder   TEXT   NOT NULL DEFAULT '',
    acked_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX outbox_by_role ON outbox (role, holder, sent_at, msg_id);
CREATE INDEX outbox_by_task ON outbox (task_id);

CREATE TABLE pending (
    decision_id TEXT    NOT NULL PRIMARY KEY,
    subject     TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    raised_at   BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL DEFAULT 0, -- 0: never
    body        TEXT    NOT NULL
);
CREATE INDEX pending_by_raise ON pending (raised_at, decision_id);
CREATE INDEX pending_by_subject ON pending (subject);

-- +goose Down
DROP TABLE pending;
DROP TABLE outbox;
DROP TABLE tasks;
