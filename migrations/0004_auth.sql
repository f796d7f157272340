-- Sign-in with passwords, rotating web auth tokens, server-to-server keys and their replay guard (docs/AUTH.md).

-- A scrypt hash in PHC form (`$scrypt$ln=15,r=8,p=3$salt$hash`); NULL means the account cannot sign in with a password.
ALTER TABLE accounts ADD COLUMN password_hash text;

-- Public-database writes over HTTP now need a server-to-server key: operator API tokens become plain ones.
UPDATE credentials SET kind = 'api' WHERE kind = 'operator';
ALTER TABLE credentials DROP CONSTRAINT credentials_kind_check;
ALTER TABLE credentials ADD CONSTRAINT credentials_kind_check CHECK (kind IN ('api', 'web_auth'));

-- A web auth token belongs to a sign-in session and is rotated on every answer: the new token names its parent,
-- and the parent retires (valid for a grace period more) the first time the new one is used.
CREATE SEQUENCE web_auth_sessions;
ALTER TABLE credentials
    ADD COLUMN session_id  bigint,
    ADD COLUMN parent_hash bytea,
    ADD COLUMN idle_ms     bigint,
    ADD COLUMN expires_ms  bigint,
    ADD COLUMN retired_ms  bigint;
UPDATE credentials SET session_id = nextval('web_auth_sessions'), idle_ms = 1209600000, expires_ms = created_ms + 1209600000
    WHERE kind = 'web_auth';
CREATE INDEX credentials_session ON credentials (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX credentials_expiry ON credentials (expires_ms) WHERE expires_ms IS NOT NULL;

-- Server-to-server keys: only the public key is kept.
CREATE TABLE server_keys (
    key_id     text PRIMARY KEY,
    public_key bytea NOT NULL,
    label      text,
    created_ms bigint NOT NULL,
    revoked_ms bigint
);

-- Signatures already accepted, so a captured request cannot be replayed inside the ±10 minute window.
CREATE TABLE seen_signatures (
    signature_hash bytea PRIMARY KEY,
    seen_ms        bigint NOT NULL
);
CREATE INDEX seen_signatures_age ON seen_signatures (seen_ms);
