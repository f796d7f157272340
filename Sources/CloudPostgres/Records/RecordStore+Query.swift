import CloudCore
import Logging
import PostgresNIO

extension RecordStore {
    /// Runs `records/query` in one zone (or every zone of the database when `zoneName` is nil). Under a deployed
    /// schema the query must pass its `check` (declared type, queryable filters, sortable sorts). With `storedAnswers`
    /// and all fields desired, each record comes as its stored answer (`RecordSnapshot.storedAnswer`).
    public func query(
        _ query: RecordQuery, zoneName: String?, offset: Int64, limit: Int?, desiredKeys: [String]?, storedAnswers: Bool = false,
        in database: DatabaseRef, logger: Logger
    ) async throws -> QueryPage {
        let limit = try self.resultsLimit(limit)
        return try await self.client.reading { connection in
            try await self.schema(ofDatabase: database.id, on: connection, logger: logger)?.check(query, path: "query")
            var builder = SQLBuilder()
            let answered = storedAnswers && desiredKeys == nil
            let columns = answered ? Self.answerColumns : Self.recordColumns(&builder, desiredKeys: desiredKeys)
            var zoneCondition: String
            if let zoneName {
                let zoneID = try await self.zoneID(named: zoneName, in: database, on: connection, logger: logger)
                zoneCondition = "r.zone_id = \(builder.bind(zoneID))"
            } else {
                // Unlisted zones are read only by name: a query across the database does not reveal them.
                zoneCondition =
                    "r.zone_id IN (SELECT id FROM zones WHERE database_id = \(builder.bind(database.id)) AND NOT deleted"
                    + (database.scope == .public ? " AND NOT starts_with(zone_name, \(builder.bind(UnlistedZone.prefix))))" : ")")
            }
            var conditions = [zoneCondition, "NOT r.deleted", "r.record_type = \(builder.bind(query.recordType))"]
            for filter in query.filters { conditions.append(try QuerySQL.condition(for: filter, &builder)) }
            var order = query.sorts.map { QuerySQL.orderTerm(for: $0, &builder) }
            order.append("r.record_name")
            builder.append(
                """
                SELECT \(columns), (SELECT z.zone_name FROM zones z WHERE z.id = r.zone_id) FROM records r WHERE \(conditions.joined(separator: " AND "))
                ORDER BY \(order.joined(separator: ", ")) LIMIT \(builder.bind(limit + 1)) OFFSET \(builder.bind(offset))
                """)
            var records: [RecordSnapshot] = []
            var zoneNames: [String] = []
            let rows = try await connection.query(builder.query, logger: logger)
            for try await row in rows {
                var cells = RowCells(row)
                guard let record = try answered ? Self.snapshot(answeredFrom: &cells) : Self.snapshot(from: &cells) else { throw RowCells.missing }
                records.append(record)
                zoneNames.append(try cells.next())
            }
            let more = records.count > limit
            if more {
                records.removeLast()
                zoneNames.removeLast()
            }
            return QueryPage(records: records, zoneNames: zoneNames, nextOffset: more ? offset + Int64(limit) : nil)
        }
    }
}

/// Translates query filters and sorts into SQL over the `fields` jsonb column; every value is bound.
enum QuerySQL {
    static func fieldValue(_ name: String, _ builder: inout SQLBuilder) -> String {
        "(r.fields -> \(builder.bind(name))::text -> 'value')"
    }

    static func json(_ value: JSONValue, _ builder: inout SQLBuilder) -> String {
        "\(builder.bind(JSONWriter.encode(value)))::jsonb"
    }

    /// A reference compares by record name only; other values compare as stored.
    static func comparable(_ value: JSONValue, type: FieldType) -> JSONValue {
        if type == .reference || type == .referenceList, case .object(let object) = value {
            return .object(["recordName": object["recordName"] ?? .null])
        }
        return value
    }

    static func distance(from location: String, latitude: Double, longitude: Double, _ builder: inout SQLBuilder) -> String {
        let lat = builder.bind(latitude)
        let lon = builder.bind(longitude)
        return """
            (2 * \(Geo.earthRadiusMeters) * asin(least(1, sqrt(
                power(sin(radians((\(location) ->> 'latitude')::float8 - \(lat)::float8) / 2), 2)
                + cos(radians(\(lat)::float8)) * cos(radians((\(location) ->> 'latitude')::float8))
                * power(sin(radians((\(location) ->> 'longitude')::float8 - \(lon)::float8) / 2), 2)))))
            """
    }

    static func condition(for filter: QueryFilter, _ builder: inout SQLBuilder) throws -> String {
        switch filter.target {
        case .system(let field): return try self.systemCondition(field, filter, &builder)
        case .field(let name): return try self.fieldCondition(name, filter, &builder)
        }
    }

    /// The SQL condition of a filter on a user field. Long because it is one table, comparator by comparator, of how
    /// each maps onto jsonb; split up, the cases would be harder to check against the reference.
    static func fieldCondition(_ name: String, _ filter: QueryFilter, _ builder: inout SQLBuilder) throws -> String {
        let x = self.fieldValue(name, &builder)
        let value = filter.value
        let isReference = value.type == .reference
        func negate(_ condition: String) -> String { "(\(x) IS NOT NULL AND NOT \(condition))" }
        func elements() throws -> [JSONValue] {
            guard let items = value.value.arrayValue else {
                throw CloudError.badRequest("\(filter.comparator.rawValue) on \(name) needs a list value")
            }
            return items.map { self.comparable($0, type: value.type) }
        }
        if let distance = filter.distance {
            guard value.type == .location, [.near, .lessThan, .lessThanOrEquals].contains(filter.comparator),
                let latitude = value.value["latitude"]?.doubleValue, let longitude = value.value["longitude"]?.doubleValue
            else { throw CloudError.badRequest("distance applies to NEAR or LESS_THAN with a LOCATION value on \(name)") }
            let d = builder.bind(distance)
            return
                "(\(x) ->> 'latitude' IS NOT NULL AND \(self.distance(from: x, latitude: latitude, longitude: longitude, &builder)) <= \(d)::float8)"
        }
        switch filter.comparator {
        case .equals, .notEquals:
            let condition =
                isReference
                ? "(\(x) ->> 'recordName' = \(builder.bind(value.value["recordName"]?.stringValue ?? "")))"
                : "(\(x) = \(self.json(value.value, &builder)))"
            return filter.comparator == .equals ? condition : negate(condition)
        case .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
            let op = [Comparator.lessThan: "<", .lessThanOrEquals: "<=", .greaterThan: ">", .greaterThanOrEquals: ">="][filter.comparator]!
            guard value.type.isNumeric || value.type == .string else {
                throw CloudError.badRequest("\(filter.comparator.rawValue) on \(name) needs a number, timestamp or string value")
            }
            let v = self.json(value.value, &builder)
            return "(jsonb_typeof(\(x)) = jsonb_typeof(\(v)) AND \(x) \(op) \(v))"
        case .near:
            throw CloudError.badRequest("NEAR on \(name) needs a distance (metres)")
        case .in, .notIn:
            let items = try elements()
            let condition =
                items.first.map { _ in
                    isReference || value.type == .referenceList
                        ? "(\(x) ->> 'recordName' = ANY(\(builder.bind(items.compactMap { $0["recordName"]?.stringValue }))::text[]))"
                        : "(\(self.json(.array(items), &builder)) @> jsonb_build_array(\(x)))"
                } ?? "false"
            return filter.comparator == .in ? condition : negate(condition)
        case .beginsWith, .notBeginsWith:
            guard let prefix = value.value.stringValue else { throw CloudError.badRequest("BEGINS_WITH on \(name) needs a string") }
            let condition = "(jsonb_typeof(\(x)) = 'string' AND starts_with(\(x) #>> '{}', \(builder.bind(prefix))))"
            return filter.comparator == .beginsWith ? condition : negate(condition)
        case .listContains, .notListContains:
            let element = self.comparable(value.value, type: value.type)
            let condition = "(jsonb_typeof(\(x)) = 'array' AND \(x) @> jsonb_build_array(\(self.json(element, &builder))))"
            return filter.comparator == .listContains ? condition : negate(condition)
        case .listContainsAny:
            let list = self.json(.array(try elements()), &builder)
            return "(jsonb_typeof(\(x)) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements(\(list)) e WHERE \(x) @> jsonb_build_array(e)))"
        case .listContainsAll:
            return "(jsonb_typeof(\(x)) = 'array' AND \(x) @> \(self.json(.array(try elements()), &builder)))"
        case .listMemberBeginsWith:
            guard let prefix = value.value.stringValue else {
                throw CloudError.badRequest("LIST_MEMBER_BEGINS_WITH on \(name) needs a string")
            }
            return
                "(jsonb_typeof(\(x)) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(\(x)) e WHERE starts_with(e, \(builder.bind(prefix)))))"
        case .containsAllTokens, .containsAnyTokens:
            // Words are letters and digits; anything else separates them, so the tsquery text cannot carry operators.
            let words = (value.value.stringValue ?? "").lowercased().split { !$0.isLetter && !$0.isNumber }
            guard !words.isEmpty else { throw CloudError.badRequest("\(filter.comparator.rawValue) on \(name) needs a string with a word") }
            let search = words.joined(separator: filter.comparator == .containsAllTokens ? " & " : " | ")
            return "(jsonb_typeof(\(x)) = 'string' AND \(self.words(in: x)) @@ to_tsquery('simple', \(builder.bind(search))))"
        }
    }

    /// A STRING field's words, as the `searchable` index holds them.
    static func words(in value: String) -> String { "to_tsvector('simple', \(value) #>> '{}')" }

    static func systemColumn(_ field: SystemField) -> String {
        switch field {
        case .recordName: "r.record_name"
        case .createdTimestamp: "r.created_ms"
        case .modifiedTimestamp: "r.modified_ms"
        case .createdUserRecordName: "r.created_by"
        case .modifiedUserRecordName: "r.modified_by"
        }
    }

    static func systemCondition(_ field: SystemField, _ filter: QueryFilter, _ builder: inout SQLBuilder) throws -> String {
        let column = self.systemColumn(field)
        let isTime = field == .createdTimestamp || field == .modifiedTimestamp
        /// A system field value as SQL: a reference or string for names, milliseconds for timestamps.
        func scalar(_ value: JSONValue) throws -> String {
            if isTime {
                guard let ms = value.int64Value else { throw CloudError.badRequest("\(field.rawValue) compares with a TIMESTAMP") }
                return "\(builder.bind(ms))::int8"
            }
            guard let name = value["recordName"]?.stringValue ?? value.stringValue else {
                throw CloudError.badRequest("\(field.rawValue) compares with a REFERENCE or STRING")
            }
            return "\(builder.bind(name))::text"
        }
        switch filter.comparator {
        case .equals: return "\(column) = \(try scalar(filter.value.value))"
        case .notEquals: return "\(column) <> \(try scalar(filter.value.value))"
        case .lessThan: return "\(column) < \(try scalar(filter.value.value))"
        case .lessThanOrEquals: return "\(column) <= \(try scalar(filter.value.value))"
        case .greaterThan: return "\(column) > \(try scalar(filter.value.value))"
        case .greaterThanOrEquals: return "\(column) >= \(try scalar(filter.value.value))"
        case .in, .notIn:
            guard let items = filter.value.value.arrayValue else { throw CloudError.badRequest("IN needs a list value") }
            let list = try items.map { try scalar($0) }
            let condition = list.isEmpty ? "false" : "\(column) IN (\(list.joined(separator: ", ")))"
            return filter.comparator == .in ? condition : "NOT (\(condition))"
        case .beginsWith, .notBeginsWith:
            guard !isTime else { throw CloudError.badRequest("BEGINS_WITH does not apply to \(field.rawValue)") }
            let condition = "starts_with(\(column), \(try scalar(filter.value.value)))"
            return filter.comparator == .beginsWith ? condition : "NOT \(condition)"
        default:
            throw CloudError.badRequest("\(filter.comparator.rawValue) does not apply to the system field \(field.rawValue)")
        }
    }

    static func orderTerm(for sort: QuerySort, _ builder: inout SQLBuilder) -> String {
        let direction = sort.ascending ? "ASC" : "DESC"
        switch sort.target {
        case .system(let field):
            return "\(self.systemColumn(field)) \(direction)"
        case .field(let name):
            let x = self.fieldValue(name, &builder)
            if let point = sort.relativeLocation {
                return "\(self.distance(from: x, latitude: point.latitude, longitude: point.longitude, &builder)) \(direction) NULLS LAST"
            }
            return "\(x) \(direction) NULLS LAST"
        }
    }
}
