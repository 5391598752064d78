-- +goose Up
-- The action gate: every signal an agent posted, gated or not (its audit
-- record, written before any gate fires), every gate, and each attempt to
-- call an agent's webhook back. Times are microseconds since the Unix
-- epoch, UTC.

-- gates: one row per signal (kind signal) or gated contract (kind
-- contract). A run id is an agent's own: (agent_id, run_id) is unique,
-- not run_id alone, so one agent cannot take another's run id, and a
-- signal posted twice is the same row. signal_hash is the SHA-256 of the
-- signal as posted: a run posted again with another body is a conflict,
-- not a duplicate. task_charge is 1 while a signal's cost has still to be
-- charged to its task (a crash between the record and the charge leaves
-- it 1).
CREATE TABLE gates (
    gate_id       TEXT    NOT NULL PRIMARY KEY,
    kind          TEXT    NOT NULL,
    run_id        TEXT, -- NULL for contracts
    agent_id      TEXT    NOT NULL,
    project_id    TEXT    NOT NULL DEFAULT '',
    task_id       TEXT    NOT NULL DEFAULT '',
    gated         INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL,
    model         TEXT    NOT NULL DEFAULT '',
    input_tokens  BIGINT  NOT NULL DEFAULT 0,
    output_tokens BIGINT  NOT NULL DEFAULT 0,
    reported_usd  DOUBLE PRECISION NOT NULL DEFAULT 0,
    cost_usd      DOUBLE PRECISION NOT NULL DEFAULT 0, -- what counts against budgets
    mismatch      INTEGER NOT NULL DEFAULT 0,
    day           TEXT    NOT NULL, -- YYYY-MM-DD (UTC) of received_at
    month         TEXT    NOT NULL, -- YYYY-MM
    received_at   BIGINT  NOT NULL,
    resolved_at   BIGINT  NOT NULL DEFAULT 0,
    resolved_by   TEXT    NOT NULL DEFAULT '',
    reasons       TEXT    NOT NULL DEFAULT '[]', -- JSON array
    callback      TEXT    NOT NULL DEFAULT 'none',
    body          TEXT    NOT NULL, -- JSON: the gate's input
    signal_hash   TEXT    NOT NULL DEFAULT '',
    task_charge   INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT gates_agent_run UNIQUE (agent_id, run_id)
);
CREATE INDEX gates_by_time ON gates (received_at, gate_id);
CREATE INDEX gates_agent_day ON gates (agent_id, day);
CREATE INDEX gates_project_day ON gates (project_id, day);
CREATE INDEX gates_task ON gates (task_id);
CREATE INDEX gates_status ON gates (status, received_at);

-- gate_callbacks: every attempt to deliver a resolution.
CREATE TABLE gate_callbacks (
    gate_id     TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    at          BIGINT  NOT NULL,
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (gate_id, attempt)
);

-- gate_budget_raises: what admins added to a budget for one period.
CREATE TABLE gate_budget_raises (
    raise_id   TEXT    NOT NULL PRIMARY KEY,
    budget_key TEXT    NOT NULL,
    period_of  TEXT    NOT NULL, -- YYYY-MM-DD or YYYY-MM (UTC) the raise holds for
    amount_usd DOUBLE PRECISION NOT NULL,
    note       TEXT    NOT NULL DEFAULT '',
    raised_by  TEXT    NOT NULL,
    at         BIGINT NOT NULL
);
CREATE INDEX gate_budget_raises_key ON gate_budget_raises (budget_key, period_of);

-- +goose Down
DROP TABLE gate_budget_raises;
DROP TABLE gate_callbacks;
DROP TABLE gates;
