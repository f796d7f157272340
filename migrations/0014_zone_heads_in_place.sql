-- Every record write moves its zone's change_seq and modified_ms (store_record_writes). With an index on either
-- column, each of those updates added an entry to every index of zones, and a lookup of the zone by name stepped over
-- one dead entry per write since the last vacuum; with none, PostgreSQL updates the row in place (a heap-only tuple)
-- while its page has room. The queries these served read the zones of one database (a handful, a few dozen for the
-- public one) or, once a day, the deleted zones of all.
DROP INDEX zones_by_change;
DROP INDEX zones_tombstones;
ALTER TABLE zones SET (fillfactor = 50);
