-- Web auth tokens that carry their own signed session, generation and issue time (docs/AUTH.md): an answer's new
-- token is generation + 1 and costs no write. Which generations a session has used, and when each was first used,
-- is recorded in batches (a few times a second per process), so a retired token used after its grace period is
-- still recognised as a copy.
CREATE TABLE auth_sessions (
    id         bigint PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts (id),
    idle_ms    bigint NOT NULL,
    created_ms bigint NOT NULL,
    revoked_ms bigint
);
CREATE TABLE auth_session_uses (
    session_id    bigint NOT NULL REFERENCES auth_sessions (id) ON DELETE CASCADE,
    generation    bigint NOT NULL,
    first_used_ms bigint NOT NULL,
    PRIMARY KEY (session_id, generation)
);
CREATE INDEX auth_session_uses_age ON auth_session_uses (first_used_ms);

-- Sessions of the row-per-token scheme keep working: their newest token counts as generation 0.
INSERT INTO auth_sessions (id, account_id, idle_ms, created_ms, revoked_ms)
SELECT session_id, min(account_id), max(idle_ms), min(created_ms), CASE WHEN bool_and(revoked_ms IS NOT NULL) THEN max(revoked_ms) END
FROM credentials WHERE kind = 'web_auth' AND session_id IS NOT NULL GROUP BY session_id;
