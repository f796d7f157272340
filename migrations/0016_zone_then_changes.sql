-- zone_then_changes: zone_changes_page (migrations/0015) answering its zone once, in a first row of its own, instead
-- of in every record's row: the server decoded the four zone columns of each of a page's 200 rows, about a tenth of its
-- CPU for the page. The record columns come first and are null in the zone's row; the zone's columns are null in a
-- record's. Both queries run in the caller's snapshot (the function is STABLE), so the zone, the head and the rows
-- agree. A new name, so that processes of the previous build, which call zone_changes_page, keep answering until they
-- are restarted; a later migration drops zone_changes_page.
CREATE FUNCTION zone_then_changes(
    database bigint, zone text, after bigint, tombstones_after bigint, record_types text[], desired_keys text[], page_limit bigint
) RETURNS TABLE (
    record_name text, record_type text, change_seq bigint, deleted boolean, fields text,
    created_ms bigint, created_by text, created_device text, modified_ms bigint, modified_by text, modified_device text,
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
    SELECT r.record_name, r.record_type, r.change_seq, r.deleted,
        CASE WHEN desired_keys IS NULL THEN r.fields::text
        ELSE (SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb) FROM jsonb_each(r.fields) WHERE key = ANY(desired_keys))::text END,
        r.created_ms, r.created_by, r.created_device, r.modified_ms, r.modified_by, r.modified_device,
        NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint
    FROM records r
    WHERE r.zone_id = page_zone AND r.change_seq > after AND (NOT r.deleted OR r.change_seq > tombstones_after)
        AND (record_types IS NULL OR r.record_type = ANY(record_types))
    ORDER BY r.change_seq LIMIT page_limit;
END
$$;
