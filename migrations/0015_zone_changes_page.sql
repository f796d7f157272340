-- A page of a zone's changes after a position, with the zone, its database's head and its purge horizon, in one
-- snapshot (RecordStore.changes, ZoneChangesPage). A function so that its plan is made once per connection and kept:
-- given the statement itself, PostgreSQL judged a plan made for each page's values cheaper and made one for every page,
-- and planning over the many indexes of `records` cost it more than reading the page's 200 rows. One query for every
-- kind of page, so one plan: tombstones only after `tombstones_after` (-1: all, the largest bigint: none), the types
-- listed or all, the fields listed or all.
CREATE FUNCTION zone_changes_page(
    database bigint, zone text, after bigint, tombstones_after bigint, record_types text[], desired_keys text[], page_limit bigint
) RETURNS TABLE (
    zone_id bigint, head bigint, purged_seq bigint, zone_seq bigint,
    record_name text, record_type text, change_seq bigint, deleted boolean, fields text,
    created_ms bigint, created_by text, created_device text, modified_ms bigint, modified_by text, modified_device text
)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT h.id, h.head, h.purged_seq, h.zone_seq, r.* FROM (
        SELECT z.id, d.change_seq AS head, z.purged_seq, z.change_seq AS zone_seq FROM databases d JOIN zones z ON z.database_id = d.id
        WHERE d.id = database AND z.zone_name = zone AND NOT z.deleted) h
    LEFT JOIN LATERAL (
        SELECT r.record_name, r.record_type, r.change_seq, r.deleted,
            CASE WHEN desired_keys IS NULL THEN r.fields::text
            ELSE (SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb) FROM jsonb_each(r.fields) WHERE key = ANY(desired_keys))::text END,
            r.created_ms, r.created_by, r.created_device, r.modified_ms, r.modified_by, r.modified_device
        FROM records r
        WHERE r.zone_id = h.id AND r.change_seq > after AND (NOT r.deleted OR r.change_seq > tombstones_after)
            AND (record_types IS NULL OR r.record_type = ANY(record_types))
        ORDER BY r.change_seq LIMIT page_limit) r ON true;
END
$$;
