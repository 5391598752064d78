-- +goose Up
-- Leases and the agent mesh. Times are microseconds since the Unix epoch,
-- UTC.

-- mesh_leases: every lease, as its holder last wrote it (the highest
-- version wins a late retry). A lease is held either directly in the store
-- (in_workflow 0: taken by TakeLease, changed by CompareLease, ended at its
-- expiry by the lease sweeper) or by its key's lease workflow (in_workflow
-- 1: written by RecordLease or adopted by TakeLease). The sweeper reads the
-- direct active leases in order of expiry; a take reads a key's active
-- lease.
CREATE TABLE mesh_leases (
    lease_id       TEXT    NOT NULL PRIMARY KEY,
    resource_key   TEXT    NOT NULL,
    agent_id       TEXT    NOT NULL,
    state          TEXT    NOT NULL, -- active, expired, released
    ttl_seconds    INTEGER NOT NULL,
    acquired_at    INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    last_heartbeat INTEGER NOT NULL,
    released_at    INTEGER NOT NULL DEFAULT 0, -- 0: not ended
    reason         TEXT    NOT NULL DEFAULT '',
    version        INTEGER NOT NULL,
    in_workflow    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX mesh_leases_by_agent ON mesh_leases (agent_id, state);
CREATE INDEX mesh_leases_by_state ON mesh_leases (state, acquired_at);
CREATE INDEX mesh_leases_by_key ON mesh_leases (resource_key, state);
CREATE INDEX mesh_leases_direct_expiry ON mesh_leases (expires_at) WHERE state = 'active' AND in_workflow = 0;

-- mesh_events: the agents' messages and the system's events, in the
-- order stored (seq). thread_id is the root of the message's thread (its
-- own id for a root).
CREATE TABLE mesh_events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT    NOT NULL UNIQUE,
    type       TEXT    NOT NULL,
    severity   TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL DEFAULT '',
    sender     TEXT    NOT NULL DEFAULT '',
    sender_id  TEXT    NOT NULL DEFAULT '',
    recipient  TEXT    NOT NULL DEFAULT '',
    subject    TEXT    NOT NULL DEFAULT '',
    content    TEXT    NOT NULL DEFAULT '',
    parent_id  TEXT    NOT NULL DEFAULT '',
    thread_id  TEXT    NOT NULL,
    task_id    TEXT    NOT NULL DEFAULT '',
    channel    TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    payload    TEXT    NOT NULL -- JSON object
);
CREATE INDEX mesh_events_by_sender ON mesh_events (sender, seq);
CREATE INDEX mesh_events_by_pair ON mesh_events (sender, recipient, seq);
CREATE INDEX mesh_events_by_recipient ON mesh_events (recipient, seq);
CREATE INDEX mesh_events_by_type ON mesh_events (type, seq);
CREATE INDEX mesh_events_by_task ON mesh_events (task_id, seq);
CREATE INDEX mesh_events_by_thread ON mesh_events (thread_id, seq);
CREATE INDEX mesh_events_by_time ON mesh_events (created_at);

-- mesh_deliveries: whose inbox an event is in: its recipient ("all" for a
-- broadcast) and each agent it mentions, with the event's channel and time
-- so that an inbox page is read from this table's key alone.
CREATE TABLE mesh_deliveries (
    recipient  TEXT   NOT NULL,
    seq        INTEGER NOT NULL,
    channel    TEXT   NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    PRIMARY KEY (recipient, seq)
) WITHOUT ROWID;

-- mesh_reads: read receipts.
CREATE TABLE mesh_reads (
    event_id TEXT    NOT NULL,
    agent_id TEXT    NOT NULL,
    read_at  INTEGER NOT NULL,
    PRIMARY KEY (event_id, agent_id)
) WITHOUT ROWID;

-- mesh_events_fts: the keyword index over subject and content.
CREATE VIRTUAL TABLE mesh_events_fts USING fts5(subject, content, content='mesh_events', content_rowid='seq');
-- +goose StatementBegin
CREATE TRIGGER mesh_events_fts_insert AFTER INSERT ON mesh_events BEGIN
    INSERT INTO mesh_events_fts (rowid, subject, content) VALUES (new.seq, new.subject, new.content);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER mesh_events_fts_insert;
DROP TABLE mesh_events_fts;
DROP TABLE mesh_reads;
DROP TABLE mesh_deliveries;
DROP TABLE mesh_events;
DROP TABLE mesh_leases;
