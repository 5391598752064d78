-- +goose Up
-- The chat bots' state, shared by every worker so that any worker can
-- answer any click and nothing is posted twice. Times are microseconds
-- since the Unix epoch, UTC.

-- chat_posts: a decision a bot posted, with the platform's references to
-- its posted copies (a JSON array), which of them were reminders or
-- escalations, and, once decided, its outcome.
CREATE TABLE chat_posts (
    platform    TEXT    NOT NULL,
    decision_id TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    decision    TEXT    NOT NULL, -- JSON
    messages    TEXT    NOT NULL, -- JSON array of message references
    outcome     TEXT    NOT NULL DEFAULT '', -- JSON; empty while open
    again       TEXT    NOT NULL DEFAULT '', -- JSON: how copies posted again were posted; empty when none
    posted_at   INTEGER NOT NULL,
    closed_at   INTEGER NOT NULL DEFAULT 0, -- 0: open
    PRIMARY KEY (platform, decision_id)
);
CREATE INDEX chat_posts_by_close ON chat_posts (closed_at);

-- chat_buttons: what a button's opaque token stands for.
CREATE TABLE chat_buttons (
    token       TEXT    NOT NULL PRIMARY KEY,
    platform    TEXT    NOT NULL,
    decision_id TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    digest      TEXT    NOT NULL DEFAULT '',
    option_id   TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX chat_buttons_by_decision ON chat_buttons (platform, decision_id);

-- chat_notes: prompts for the note an option requires, waiting for the
-- reply of the admin asked, until expires_at.
CREATE TABLE chat_notes (
    platform   TEXT    NOT NULL,
    note_key   TEXT    NOT NULL,
    token      TEXT    NOT NULL,
    user_id    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (platform, note_key)
);
CREATE INDEX chat_notes_by_expiry ON chat_notes (expires_at);

-- chat_notices: what a bot posts once. Inserting the key claims it; the
-- claim names its holder and becomes posted (posted_at > 0) after the post.
CREATE TABLE chat_notices (
    platform   TEXT    NOT NULL,
    notice_key TEXT    NOT NULL,
    holder     TEXT    NOT NULL,
    claimed_at INTEGER NOT NULL,
    posted_at  INTEGER NOT NULL DEFAULT 0, -- 0: claimed, not yet posted
    PRIMARY KEY (platform, notice_key)
);
CREATE INDEX chat_notices_by_claim ON chat_notices (claimed_at);

-- leases: a job that runs on one worker at a time (a bot's long polling
-- or Socket Mode), held by holder until expires_at by the database's clock.
CREATE TABLE leases (
    name       TEXT    NOT NULL PRIMARY KEY,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);

-- +goose Down
DROP TABLE leases;
DROP TABLE chat_notices;
DROP TABLE chat_notes;
DROP TABLE chat_buttons;
DROP TABLE chat_posts;
