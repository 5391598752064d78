-- +goose Up
-- SQLite's keyword index is brought up to date as a search begins
-- (00017 there); PostgreSQL's is a generated column, kept as each event is
-- stored, and needs nothing.
SELECT 1;

-- +goose Down
SELECT 1;
