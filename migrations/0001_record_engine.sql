-- The record engine: accounts and credentials, databases with their change sequence, zones, records.
-- Every write to a database takes the row lock on its `databases` row first (see docs/SYNC.md), so change
-- sequence numbers are assigned and committed in one order per database.

CREATE TABLE server_secrets (
    name  text PRIMARY KEY,
    value bytea NOT NULL
);

CREATE TABLE accounts (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    user_record_name text NOT NULL UNIQUE,
    created_ms       bigint NOT NULL
);

-- Tokens are stored as SHA-256 hashes only.
CREATE TABLE credentials (
    token_hash bytea PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('api', 'operator', 'web_auth')),
    account_id bigint REFERENCES accounts (id) ON DELETE CASCADE,
    label      text,
    created_ms bigint NOT NULL,
    revoked_ms bigint,
    CHECK ((kind = 'web_auth') = (account_id IS NOT NULL))
);

CREATE TABLE databases (
    id               bigserial PRIMARY KEY,
    container        text NOT NULL,
    environment      text NOT NULL,
    scope            text NOT NULL CHECK (scope IN ('public', 'private')),
    owner_account_id bigint REFERENCES accounts (id),
    -- Last change sequence number handed out in this database.
    change_seq       bigint NOT NULL DEFAULT 0,
    -- Database tokens at or below this were issued before a purged zone tombstone.
    purged_seq       bigint NOT NULL DEFAULT 0,
    UNIQUE NULLS NOT DISTINCT (container, environment, scope, owner_account_id)
);

CREATE TABLE zones (
    id          bigserial PRIMARY KEY,
    database_id bigint NOT NULL REFERENCES databases (id),
    zone_name   text NOT NULL,
    -- Sequence number of the last change to the zone or its records (drives changes/database).
    change_seq  bigint NOT NULL,
    -- Zone tokens below this may have missed a purged tombstone: CHANGE_TOKEN_EXPIRED.
    purged_seq  bigint NOT NULL DEFAULT 0,
    deleted     boolean NOT NULL DEFAULT false,
    modified_ms bigint NOT NULL
);
CREATE UNIQUE INDEX zones_live_name ON zones (database_id, zone_name) WHERE NOT deleted;
CREATE INDEX zones_by_change ON zones (database_id, change_seq);
CREATE INDEX zones_tombstones ON zones (modified_ms) WHERE deleted;

-- One row per record: its latest version, or its tombstone.
CREATE TABLE records (
    zone_id       bigint NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
    record_name   text NOT NULL,
    record_type   text NOT NULL,
    change_seq    bigint NOT NULL,
    deleted       boolean NOT NULL DEFAULT false,
    -- Wire-shaped fields {"name": {"type": T, "value": V}}; '{}' for tombstones.
    fields        jsonb NOT NULL,
    -- Targets of this record's DELETE_SELF references: deleting one of them deletes this record.
    cascade_refs  text[] NOT NULL DEFAULT '{}',
    created_ms    bigint NOT NULL,
    created_by    text NOT NULL,
    created_device text NOT NULL,
    modified_ms   bigint NOT NULL,
    modified_by   text NOT NULL,
    modified_device text NOT NULL,
    PRIMARY KEY (zone_id, record_name)
);
-- Deltas read (zone_id, change_seq > token) in order: cost follows the number of changes, not the zone size.
CREATE UNIQUE INDEX records_by_change ON records (zone_id, change_seq);
CREATE INDEX records_by_type ON records (zone_id, record_type) WHERE NOT deleted;
CREATE INDEX records_cascade_refs ON records USING gin (cascade_refs) WHERE NOT deleted;
CREATE INDEX records_tombstones ON records (modified_ms) WHERE deleted;
