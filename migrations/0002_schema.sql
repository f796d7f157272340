-- Deployed record schemas (`stadiumcloud schema apply`): every deploy adds a version; the newest is in force.
CREATE TABLE schema_versions (
    version     serial PRIMARY KEY,
    definition  jsonb NOT NULL,
    deployed_ms bigint NOT NULL
);
