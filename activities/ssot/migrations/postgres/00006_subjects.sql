-- +goose Up
-- The newest save of the open decisions of each workflow that is not a
-- task (a gate, a lease): an older save retried late changes nothing.
CREATE TABLE subjects (
	subject TEXT PRIMARY KEY,
	rev BIGINT NOT NULL
);

-- +goose Down
DROP TABLE subjects;
