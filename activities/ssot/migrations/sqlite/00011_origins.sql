-- +goose Up
-- Where tasks came from: one row per item of a tracker (a GitHub issue, a
-- ticket started over the API with an external_id), claimed before its
-- task starts, so that an item starts one task whatever the number of
-- workers, events and retries. task_id is empty while the claim's start
-- is under way.
CREATE TABLE task_origins (
	source TEXT NOT NULL,
	external_id TEXT NOT NULL,
	task_id TEXT NOT NULL DEFAULT '',
	url TEXT NOT NULL DEFAULT '',
	claimed_at BIGINT NOT NULL,
	PRIMARY KEY (source, external_id)
);
CREATE INDEX task_origins_task ON task_origins (task_id);

-- +goose Down
DROP TABLE task_origins;
