-- +goose Up
-- What the runner agents spent today (the dashboard's Agents page) reads
-- the transcripts by time: this index covers that read.
CREATE INDEX transcripts_spend ON transcripts (at, role, task_id, run, cost_usd);

-- +goose Down
DROP INDEX transcripts_spend;
