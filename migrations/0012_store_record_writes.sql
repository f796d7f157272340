-- A batch of record versions stored in one statement (RecordStore.store; docs/SYNC.md), as a procedure so that an
-- optimistic save can commit inside its own call: PostgreSQL sends the call's row only after that commit, so a save
-- is one round trip after its read, and no answer is ever sent for a write that did not commit.
--
-- Creates (c_*) go in only over tombstones (a live name is left as it is and not listed in created_names); the other
-- versions (o_*) go over anything. The database's and the zone's change numbers move to p_last_seq. With
-- p_expected_head, nothing is written unless the database's change number is still that one: its row is updated
-- first and every other part waits for that, so a writer that committed since, or commits while this one waits for
-- the row, leaves did_write false. With p_key, the same statement keeps an idempotent write's answer.
--
-- With p_commit (a call outside a transaction block) the procedure commits what it wrote, unless a create met a live
-- record: the caller planned on a stale read, so it rolls back and reports nothing written.
CREATE PROCEDURE store_record_writes(
    p_zone bigint, p_stamp_ms bigint, p_user text, p_device text,
    c_names text[], c_types text[], c_seqs bigint[], c_deleted boolean[], c_fields text[], c_refs text[], c_assets text[],
    o_names text[], o_types text[], o_seqs bigint[], o_deleted boolean[], o_fields text[], o_refs text[], o_assets text[],
    p_last_seq bigint, p_database bigint, p_expected_head bigint,
    p_key text, p_request_hash bytea, p_status bigint, p_answer bytea,
    p_commit boolean,
    INOUT did_write boolean DEFAULT NULL, INOUT created_names text[] DEFAULT NULL
) LANGUAGE plpgsql AS $procedure$
BEGIN
    WITH advanced AS (
        UPDATE databases SET change_seq = p_last_seq
        WHERE id = p_database AND (p_expected_head IS NULL OR change_seq = p_expected_head) RETURNING 1),
    kept AS (
        INSERT INTO idempotent_writes (database_id, key, request_hash, status, answer, created_ms)
        SELECT p_database, p_key, p_request_hash, p_status, p_answer, p_stamp_ms FROM advanced WHERE p_key IS NOT NULL
        RETURNING 1),
    -- Creates and other versions differ only in the conflict rule (a create goes only over a tombstone); ON
    -- CONFLICT cannot see a column of the source row, so they are two statements.
    created AS (
        INSERT INTO records (zone_id, record_name, record_type, change_seq, deleted, fields, cascade_refs, asset_refs,
            created_ms, created_by, created_device, modified_ms, modified_by, modified_device)
        SELECT p_zone, u.name, u.type, u.seq, u.deleted, u.fields::jsonb,
            CASE WHEN u.refs = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.refs::jsonb)) END,
            CASE WHEN u.assets = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.assets::jsonb)) END,
            p_stamp_ms, p_user, p_device, p_stamp_ms, p_user, p_device
        FROM unnest(c_names, c_types, c_seqs, c_deleted, c_fields, c_refs, c_assets) AS u(name, type, seq, deleted, fields, refs, assets)
        WHERE EXISTS (SELECT FROM advanced)
        ON CONFLICT (zone_id, record_name) DO UPDATE SET
            record_type = EXCLUDED.record_type, change_seq = EXCLUDED.change_seq, deleted = EXCLUDED.deleted,
            fields = EXCLUDED.fields, cascade_refs = EXCLUDED.cascade_refs, asset_refs = EXCLUDED.asset_refs,
            created_ms = EXCLUDED.created_ms, created_by = EXCLUDED.created_by, created_device = EXCLUDED.created_device,
            modified_ms = EXCLUDED.modified_ms, modified_by = EXCLUDED.modified_by, modified_device = EXCLUDED.modified_device
        WHERE records.deleted
        RETURNING record_name),
    upserted AS (
        INSERT INTO records (zone_id, record_name, record_type, change_seq, deleted, fields, cascade_refs, asset_refs,
            created_ms, created_by, created_device, modified_ms, modified_by, modified_device)
        SELECT p_zone, u.name, u.type, u.seq, u.deleted, u.fields::jsonb,
            CASE WHEN u.refs = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.refs::jsonb)) END,
            CASE WHEN u.assets = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.assets::jsonb)) END,
            p_stamp_ms, p_user, p_device, p_stamp_ms, p_user, p_device
        FROM unnest(o_names, o_types, o_seqs, o_deleted, o_fields, o_refs, o_assets) AS u(name, type, seq, deleted, fields, refs, assets)
        WHERE EXISTS (SELECT FROM advanced)
        ON CONFLICT (zone_id, record_name) DO UPDATE SET
            record_type = EXCLUDED.record_type, change_seq = EXCLUDED.change_seq, deleted = EXCLUDED.deleted,
            fields = EXCLUDED.fields, cascade_refs = EXCLUDED.cascade_refs, asset_refs = EXCLUDED.asset_refs,
            -- A version over a tombstone starts a new record; over a live one it keeps its creation.
            created_ms = CASE WHEN records.deleted THEN EXCLUDED.created_ms ELSE records.created_ms END,
            created_by = CASE WHEN records.deleted THEN EXCLUDED.created_by ELSE records.created_by END,
            created_device = CASE WHEN records.deleted THEN EXCLUDED.created_device ELSE records.created_device END,
            modified_ms = EXCLUDED.modified_ms, modified_by = EXCLUDED.modified_by, modified_device = EXCLUDED.modified_device
        RETURNING record_name),
    zoned AS (
        UPDATE zones SET change_seq = p_last_seq, modified_ms = p_stamp_ms
        WHERE id = p_zone AND EXISTS (SELECT FROM advanced) RETURNING 1)
    SELECT EXISTS (SELECT FROM advanced), ARRAY(SELECT record_name FROM created) INTO did_write, created_names;

    IF p_commit THEN
        IF did_write AND cardinality(created_names) < coalesce(cardinality(c_names), 0) THEN
            ROLLBACK;
            did_write := false;
        ELSE
            COMMIT;
        END IF;
    END IF;
END
$procedure$;
