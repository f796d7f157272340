-- Assets stored for a database (an account's private database, or the public one): the quota sums them, and the
-- collector removes those no live record references any more (records.asset_refs), after a grace period.
CREATE TABLE assets (
    database_id bigint NOT NULL REFERENCES databases (id),
    checksum    text NOT NULL,
    size        bigint NOT NULL,
    stored_ms   bigint NOT NULL,
    PRIMARY KEY (database_id, checksum)
);
CREATE INDEX assets_by_age ON assets (stored_ms);

-- SHA-256 checksums of the assets a record's fields hold.
ALTER TABLE records ADD COLUMN asset_refs text[] NOT NULL DEFAULT '{}';
CREATE INDEX records_asset_refs ON records USING gin (asset_refs) WHERE NOT deleted;
