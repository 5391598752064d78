-- +goose Up
-- A lease is held either directly in the store (in_workflow 0: taken by
-- TakeLease, changed by CompareLease, ended at its expiry by the lease
-- sweeper) or by its key's lease workflow (in_workflow 1: written by
-- RecordLease or adopted by TakeLease). The sweeper reads the direct
-- active leases in order of expiry; a take reads a key's active lease.
ALTER TABLE mesh_leases ADD COLUMN in_workflow INTEGER NOT NULL DEFAULT 0;
CREATE INDEX mesh_leases_by_key ON mesh_leases (resource_key, state);
CREATE INDEX mesh_leases_direct_expiry ON mesh_leases (expires_at) WHERE state = 'active' AND in_workflow = 0;

-- +goose Down
DROP INDEX mesh_leases_direct_expiry;
DROP INDEX mesh_leases_by_key;
ALTER TABLE mesh_leases DROP COLUMN in_workflow;
