-- +goose Up
-- The runner checkouts ampflow is removing: a row is written before the
-- first file goes and deleted once the checkout is gone, so a checkout
-- a kill left half removed is never taken for an agent's work, and the
-- next worker finishes removing it.
CREATE TABLE worktree_marks (
	path TEXT PRIMARY KEY,
	task_id TEXT NOT NULL,
	repo TEXT NOT NULL DEFAULT '',
	marked_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE worktree_marks;
