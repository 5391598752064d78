-- +goose Up
-- AOF/1 tasks: the newest state each AOF task workflow saved (an older
-- save retried late changes nothing), its run and handoff artifacts, and
-- the protocol's event log.
CREATE TABLE aof_tasks (
	task_id TEXT PRIMARY KEY,
	status TEXT NOT NULL,
	parent_task_id TEXT NOT NULL DEFAULT '',
	rev BIGINT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	body TEXT NOT NULL
);
CREATE INDEX aof_tasks_status ON aof_tasks (status, task_id);

CREATE TABLE aof_artifacts (
	task_id TEXT NOT NULL,
	name TEXT NOT NULL,
	rev BIGINT NOT NULL,
	body TEXT NOT NULL,
	PRIMARY KEY (task_id, name)
);

CREATE TABLE aof_events (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	id TEXT NOT NULL UNIQUE,
	task_id TEXT NOT NULL DEFAULT '',
	type TEXT NOT NULL,
	actor TEXT NOT NULL DEFAULT '',
	at BIGINT NOT NULL,
	payload TEXT NOT NULL
);
CREATE INDEX aof_events_task ON aof_events (task_id, seq);

-- The last task number allocated per day (TASK-<day>-NNN).
CREATE TABLE aof_task_ids (
	day TEXT PRIMARY KEY,
	last BIGINT NOT NULL
);

-- +goose Down
DROP TABLE aof_task_ids;
DROP TABLE aof_events;
DROP TABLE aof_artifacts;
DROP TABLE aof_tasks;
