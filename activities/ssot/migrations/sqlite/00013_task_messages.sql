-- +goose Up
-- What people send a task's running agent: a message (kind message),
-- given to the agent as a user turn, or an interrupt (kind interrupt),
-- which stops its run. delivered_at is 0 until the agent got it, and run
-- names the delivery that took it.
CREATE TABLE task_messages (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	task_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	sender TEXT NOT NULL,
	text TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	delivered_at BIGINT NOT NULL DEFAULT 0,
	run TEXT NOT NULL DEFAULT ''
);
CREATE INDEX task_messages_task ON task_messages (task_id, kind, delivered_at);

-- +goose Down
DROP TABLE task_messages;
