-- +goose Up
-- The action gate, second step. A run id is an agent's own: (agent_id,
-- run_id) is unique, not run_id alone, so one agent cannot take another's
-- run id. signal_hash is the SHA-256 of the signal as posted: a run
-- posted again with another body is a conflict, not a duplicate.
-- task_charge is 1 while a signal's cost has still to be charged to its
-- task (a crash between the record and the charge leaves it 1).
-- gate_budget_raises: what admins added to a budget for one period.
-- SQLite cannot drop a column's UNIQUE: the table is rebuilt.
CREATE TABLE gates_next (
    gate_id       TEXT    NOT NULL PRIMARY KEY,
    kind          TEXT    NOT NULL,
    run_id        TEXT, -- NULL for contracts
    agent_id      TEXT    NOT NULL,
    project_id    TEXT    NOT NULL DEFAULT '',
    task_id       TEXT    NOT NULL DEFAULT '',
    gated         INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL,
    model         TEXT    NOT NULL DEFAULT '',
    input_tokens  INTEGER  NOT NULL DEFAULT 0,
    output_tokens INTEGER  NOT NULL DEFAULT 0,
    reported_usd  REAL NOT NULL DEFAULT 0,
    cost_usd      REAL NOT NULL DEFAULT 0,
    mismatch      INTEGER NOT NULL DEFAULT 0,
    day           TEXT    NOT NULL,
    month         TEXT    NOT NULL,
    received_at   INTEGER  NOT NULL,
    resolved_at   INTEGER  NOT NULL DEFAULT 0,
    resolved_by   TEXT    NOT NULL DEFAULT '',
    reasons       TEXT    NOT NULL DEFAULT '[]',
    callback      TEXT    NOT NULL DEFAULT 'none',
    body          TEXT    NOT NULL,
    signal_hash   TEXT    NOT NULL DEFAULT '',
    task_charge   INTEGER NOT NULL DEFAULT 0,
    UNIQUE (agent_id, run_id)
);
INSERT INTO gates_next (gate_id, kind, run_id, agent_id, project_id, task_id, gated, status, model, input_tokens,
    output_tokens, reported_usd, cost_usd, mismatch, day, month, received_at, resolved_at, resolved_by, reasons,
    callback, body)
SELECT gate_id, kind, run_id, agent_id, project_id, task_id, gated, status, model, input_tokens,
    output_tokens, reported_usd, cost_usd, mismatch, day, month, received_at, resolved_at, resolved_by, reasons,
    callback, body FROM gates;
DROP TABLE gates;
ALTER TABLE gates_next RENAME TO gates;
CREATE INDEX gates_by_time ON gates (received_at, gate_id);
CREATE INDEX gates_agent_day ON gates (agent_id, day);
CREATE INDEX gates_project_day ON gates (project_id, day);
CREATE INDEX gates_task ON gates (task_id);
CREATE INDEX gates_status ON gates (status, received_at);

CREATE TABLE gate_budget_raises (
    raise_id   TEXT    NOT NULL PRIMARY KEY,
    budget_key TEXT    NOT NULL,
    period_of  TEXT    NOT NULL, -- YYYY-MM-DD or YYYY-MM (UTC) the raise holds for
    amount_usd REAL    NOT NULL,
    note       TEXT    NOT NULL DEFAULT '',
    raised_by  TEXT    NOT NULL,
    at         INTEGER NOT NULL
);
CREATE INDEX gate_budget_raises_key ON gate_budget_raises (budget_key, period_of);

-- +goose Down
DROP TABLE gate_budget_raises;
DROP INDEX gates_status;
ALTER TABLE gates DROP COLUMN task_charge;
ALTER TABLE gates DROP COLUMN signal_hash;
