-- Answers to writes sent with an Idempotency-Key, stored in the write's own transaction: a retry after a lost
-- answer (or a server crash) gets the first answer instead of a second write (docs/RELIABILITY.md).
CREATE TABLE idempotent_writes (
    database_id  bigint NOT NULL REFERENCES databases (id),
    key          text NOT NULL,
    request_hash bytea NOT NULL,
    status       integer NOT NULL,
    answer       bytea NOT NULL,
    created_ms   bigint NOT NULL,
    PRIMARY KEY (database_id, key)
);
CREATE INDEX idempotent_writes_age ON idempotent_writes (created_ms);
