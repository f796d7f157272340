-- Token buckets shared by every server process: each process counts requests in memory and adds its counts here a
-- few times a second, then takes the bucket's level back (docs/SCALING.md). UNLOGGED: a budget need not survive a
-- database crash, and the table then costs no WAL. Rows idle for an hour are full again and are purged.
CREATE UNLOGGED TABLE rate_buckets (
    key        text PRIMARY KEY,
    tokens     double precision NOT NULL,
    per_second double precision NOT NULL,
    burst      double precision NOT NULL,
    updated_ms bigint NOT NULL
);
CREATE INDEX rate_buckets_age ON rate_buckets (updated_ms);
