-- Each record's answer, rendered once when it is written rather than at every read: the members of its CloudKit
-- dictionary but its change tag and zone (the server writes those around it), or a tombstone's three. A page of changes
-- read the record's eleven columns, PostgreSQL rendering its fields' jsonb as text at every read and the server decoding
-- every cell; `zone_then_answers` reads this one column (docs/SYNC.md, bench/README.md "Pages"). A generated column, so
-- no write path can store a record without it or with another version's.

-- A text as a JSON string. to_json is STABLE because it takes any type, some of which print by settings (dates); a
-- text prints the same always, and a generated column takes only IMMUTABLE functions. plpgsql, not sql: a sql
-- function that cannot be inlined runs through its own executor, which cost a save twice as much.
CREATE FUNCTION json_string(value text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    RETURN to_json(value)::text;
END
$$;

ALTER TABLE records ADD COLUMN answer text GENERATED ALWAYS AS (
    '"recordName":' || json_string(record_name) || ',"recordType":' || json_string(record_type) ||
    CASE WHEN deleted THEN ',"deleted":true' ELSE
        ',"fields":' || fields::text ||
        ',"created":{"timestamp":' || created_ms::text || ',"userRecordName":' || json_string(created_by) ||
            ',"deviceID":' || json_string(created_device) || '}' ||
        ',"modified":{"timestamp":' || modified_ms::text || ',"userRecordName":' || json_string(modified_by) ||
            ',"deviceID":' || json_string(modified_device) || '}' ||
        ',"deleted":false,"pluginFields":{}'
    END
) STORED;

-- zone_then_changes (migrations/0016) answering each record's stored answer instead of its columns: the first row is
-- the zone (record columns null), each row after it a record. The same rows, in the same snapshot.
CREATE FUNCTION zone_then_answers(
    database bigint, zone text, after bigint, tombstones_after bigint, record_types text[], page_limit bigint
) RETURNS TABLE (
    record_name text, record_type text, change_seq bigint, deleted boolean, answer text,
    zone_id bigint, head bigint, purged_seq bigint, zone_seq bigint
)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    page_zone bigint;
BEGIN
    SELECT z.id, d.change_seq, z.purged_seq, z.change_seq INTO page_zone, head, purged_seq, zone_seq
    FROM databases d JOIN zones z ON z.database_id = d.id
    WHERE d.id = database AND z.zone_name = zone AND NOT z.deleted;
    IF NOT FOUND THEN RETURN; END IF;
    zone_id := page_zone;
    RETURN NEXT;
    RETURN QUERY
    SELECT r.record_name, r.record_type, r.change_seq, r.deleted, r.answer, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint
    FROM records r
    WHERE r.zone_id = page_zone AND r.change_seq > after AND (NOT r.deleted OR r.change_seq > tombstones_after)
        AND (record_types IS NULL OR r.record_type = ANY(record_types))
    ORDER BY r.change_seq LIMIT page_limit;
END
$$;
