-- +goose Up
-- Risk contracts (AMCP): what /v1/decide issued, signed, and what became
-- of it. body is the contract as signed (canonical JSON) and signature its
-- HMAC-SHA256; the other columns repeat what the queries need. state is
-- issued, awaiting_approval, approved, rejected or redeemed (expired is
-- read from expires_at). Times are microseconds since the Unix epoch, UTC.
CREATE TABLE contracts (
    id               TEXT    NOT NULL PRIMARY KEY,
    owner            TEXT    NOT NULL,
    session_id       TEXT    NOT NULL DEFAULT '',
    primitive        TEXT    NOT NULL,
    minimum_handling TEXT    NOT NULL,
    body             TEXT    NOT NULL,
    digest           TEXT    NOT NULL,
    signature        TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    gate_id          TEXT    NOT NULL DEFAULT '',
    decided_by       TEXT    NOT NULL DEFAULT '',
    issued_at        BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    changed_at       BIGINT NOT NULL,
    redeemed_at      BIGINT NOT NULL DEFAULT 0 -- 0: not redeemed
);
CREATE INDEX contracts_by_owner ON contracts (owner, issued_at);
CREATE INDEX contracts_by_expiry ON contracts (expires_at);

-- +goose Down
DROP TABLE contracts;
