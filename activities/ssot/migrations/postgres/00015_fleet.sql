-- +goose Up
-- The fleet: one row per worker that runs agent CLIs (its runner.host),
-- which it writes every few seconds with its slots, its runs and its
-- queue (JSON), so that any worker's API shows every host's.
CREATE TABLE fleet_hosts (
	host TEXT PRIMARY KEY,
	slots INTEGER NOT NULL,
	runs TEXT NOT NULL,
	started_at BIGINT NOT NULL,
	seen_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE fleet_hosts;
