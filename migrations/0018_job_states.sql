-- What a background job must remember beyond the process running it, by job: the score feeds keep each provider's
-- recent failures and how long it rests here (docs/FEEDS.md), so a restart or another process taking the feeds over
-- carries on where the last one was. The state is the job's own JSON; the server reads it only through that job.
CREATE TABLE job_states (
    job        text PRIMARY KEY,
    state      text NOT NULL,
    updated_ms bigint NOT NULL
);
