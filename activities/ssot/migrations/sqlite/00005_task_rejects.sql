-- +goose Up
-- Task listings show each task's rejected reviews without reading its
-- whole state.
ALTER TABLE tasks ADD COLUMN reject_count INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE tasks DROP COLUMN reject_count;
