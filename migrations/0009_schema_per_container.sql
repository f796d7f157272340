-- A schema per container and environment, as CloudKit keeps one. Versions deployed before this migration governed
-- every container and environment: they keep container '' and the server adopts the newest of them as the
-- development and production schema of each container it serves that has none yet (RecordStore.adoptGlobalSchema).
ALTER TABLE schema_versions
    ADD COLUMN container   text NOT NULL DEFAULT '',
    ADD COLUMN environment text NOT NULL DEFAULT '';
CREATE INDEX schema_versions_scope ON schema_versions (container, environment, version);
