-- +goose Up
-- transcripts: what each run of an agent CLI did, as it happened: its
-- text, tool calls, tool results with their exit codes, errors, retries
-- and running usage. Written by the activity that runs the CLI, in small
-- batches, never through the workflow's history. seq counts a task's
-- entries from 1; run counts a role's runs of the task from 1 (0 holds
-- notes written outside a run).
CREATE TABLE transcripts (
	task_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	role TEXT NOT NULL,
	run INTEGER NOT NULL,
	at BIGINT NOT NULL, -- microseconds since the Unix epoch, UTC
	kind TEXT NOT NULL,
	tool TEXT NOT NULL DEFAULT '',
	body TEXT NOT NULL DEFAULT '',
	is_error INTEGER NOT NULL DEFAULT 0, -- 1: a failed tool result or run
	exit_code INTEGER, -- NULL when the CLI did not say
	cost_usd REAL NOT NULL DEFAULT 0,
	input_tokens BIGINT NOT NULL DEFAULT 0,
	output_tokens BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (task_id, seq)
);
CREATE INDEX transcripts_run ON transcripts (task_id, role, run, seq);

-- +goose Down
DROP TABLE transcripts;
