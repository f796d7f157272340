-- What the operator console shows of activity: when each container API token and server-to-server key was last used
-- (written at most once a minute per credential, on the lookup the credential cache makes anyway), and the last run
-- of each background job with its figures.
ALTER TABLE credentials ADD COLUMN last_used_ms bigint;
ALTER TABLE server_keys ADD COLUMN last_used_ms bigint;

CREATE TABLE job_runs (
    job        text PRIMARY KEY,
    started_ms bigint NOT NULL,
    ended_ms   bigint NOT NULL,
    -- The run's figures ("12 tombstones, 0 zones"), or why it failed.
    outcome    text NOT NULL,
    succeeded  boolean NOT NULL
);
