-- Which history of the database this is (docs/SYNC.md, "Restores and failovers"). One row, written by the server
-- the first time it connects: a random epoch and the fingerprint of the database it was taken in (PostgreSQL's
-- system identifier, the WAL timeline, the database's oid and this table's oid). A restore into a new database,
-- `pg_restore --clean`, point-in-time recovery and the promotion of a replica each change the fingerprint; the server
-- then starts a new epoch, and every change token, asset URL and receipt of another epoch is refused.
CREATE TABLE history (
    only_row    boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    epoch       bigint NOT NULL,
    fingerprint text NOT NULL,
    -- Tokens without an epoch (issued before this table existed) belong to this history until its first fork.
    accepts_unmarked boolean NOT NULL,
    started_ms  bigint NOT NULL
);

-- Web auth session ids are random from now on (CredentialStore.startSession): a sequence rolled back by a restore
-- would hand a lost session's id to someone else.
DROP SEQUENCE web_auth_sessions;
