-- Live sync (issue 18): CloudKit subscriptions and the web courier's push tokens (docs/SYNC.md, "Live sync").

-- A person's subscriptions in one database. `definition` is the subscription as answered to clients; the other
-- columns are what the courier matches changes with.
CREATE TABLE subscriptions (
    database_id     bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    account_id      bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    subscription_id text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('query', 'zone', 'database')),
    -- The zone of a zone subscription, or of a query subscription that is not zone-wide.
    zone_name       text,
    record_type     text,
    -- Bits: 1 create, 2 update, 4 delete.
    fires_on        smallint NOT NULL DEFAULT 7,
    fires_once      boolean NOT NULL DEFAULT false,
    definition      jsonb NOT NULL,
    -- The database's change number when it was saved: it fires on later changes only.
    since_seq       bigint NOT NULL,
    created_ms      bigint NOT NULL,
    PRIMARY KEY (account_id, database_id, subscription_id)
);

-- A push token from tokens/create, by the SHA-256 of the token (the token itself is a credential).
CREATE TABLE courier_tokens (
    token_hash  bytea PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    container   text NOT NULL,
    environment text NOT NULL,
    -- The device that asked for it (X-StadiumCloud-Device-ID), whose own changes it is not told about.
    device_id   text,
    created_ms  bigint NOT NULL,
    expires_ms  bigint NOT NULL
);
CREATE INDEX courier_tokens_expiry ON courier_tokens (expires_ms);

-- How far a token's notifications have been computed, per database.
CREATE TABLE courier_positions (
    token_hash  bytea NOT NULL REFERENCES courier_tokens (token_hash) ON DELETE CASCADE,
    database_id bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    seq         bigint NOT NULL,
    PRIMARY KEY (token_hash, database_id)
);

-- Notifications computed but not yet delivered, first in first out: one per courier answer.
CREATE TABLE courier_frames (
    id         bigserial PRIMARY KEY,
    token_hash bytea NOT NULL REFERENCES courier_tokens (token_hash) ON DELETE CASCADE,
    frame      text NOT NULL
);
CREATE INDEX courier_frames_by_token ON courier_frames (token_hash, id);
