-- Operators sign in to the web console (/console) with accounts of their own (`accounts create NAME --operator`);
-- a person's ordinary account cannot.
ALTER TABLE accounts ADD COLUMN operator boolean NOT NULL DEFAULT false;

-- Console sessions: the cookie's SHA-256, the form token every console form carries (CSRF), and the last use
-- (the idle timeout is counted from it).
CREATE TABLE console_sessions (
    token_hash bytea PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    csrf       text NOT NULL,
    used_ms    bigint NOT NULL
);
