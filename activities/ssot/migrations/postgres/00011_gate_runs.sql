-- +goose Up
-- The action gate, second step. A run id is an agent's own: (agent_id,
-- run_id) is unique, not run_id alone, so one agent cannot take another's
-- run id. signal_hash is the SHA-256 of the signal as posted: a run
-- posted again with another body is a conflict, not a duplicate.
-- task_charge is 1 while a signal's cost has still to be charged to its
-- task (a crash between the record and the charge leaves it 1).
-- gate_budget_raises: what admins added to a budget for one period.
ALTER TABLE gates DROP CONSTRAINT gates_run_id_key;
ALTER TABLE gates ADD CONSTRAINT gates_agent_run UNIQUE (agent_id, run_id);
ALTER TABLE gates ADD COLUMN signal_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE gates ADD COLUMN task_charge INTEGER NOT NULL DEFAULT 0;
CREATE INDEX gates_status ON gates (status, received_at);

CREATE TABLE gate_budget_raises (
    raise_id   TEXT    NOT NULL PRIMARY KEY,
    budget_key TEXT    NOT NULL,
    period_of  TEXT    NOT NULL, -- YYYY-MM-DD or YYYY-MM (UTC) the raise holds for
    amount_usd DOUBLE PRECISION NOT NULL,
    note       TEXT    NOT NULL DEFAULT '',
    raised_by  TEXT    NOT NULL,
    at         BIGINT  NOT NULL
);
CREATE INDEX gate_budget_raises_key ON gate_budget_raises (budget_key, period_of);

-- +goose Down
DROP TABLE gate_budget_raises;
DROP INDEX gates_status;
ALTER TABLE gates DROP COLUMN task_charge;
ALTER TABLE gates DROP COLUMN signal_hash;
ALTER TABLE gates DROP CONSTRAINT gates_agent_run;
ALTER TABLE gates ADD CONSTRAINT gates_run_id_key UNIQUE (run_id);
