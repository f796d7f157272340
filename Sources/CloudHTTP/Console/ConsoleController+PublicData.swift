import CloudCore
import CloudPostgres
import Foundation
import Hummingbird
import Logging

/// Public data: browse and search the public database's records by type, one record with the records that refer
/// to it (aliases, venues) and its dates, the change log, and an edit of one system field through the sports
/// layer's merge (previewed, then confirmed). Only the public database: a person's records never appear.
extension ConsoleController {
    /// The container and environment a page works on: the request's when the server serves them, else the first
    /// container's development environment.
    func scope(container: String?, environment: String?) -> SchemaScope {
        let containers = self.configuration.containers.sorted()
        return SchemaScope(
            container: container.flatMap { containers.contains($0) ? $0 : nil } ?? containers.first ?? "",
            environment: environment.flatMap { SchemaScope.environments.contains($0) ? $0 : nil } ?? "development")
    }

    func scope(of request: Request) -> SchemaScope {
        self.scope(
            container: request.uri.queryParameters["container"].map(String.init),
            environment: request.uri.queryParameters["environment"].map(String.init))
    }

    /// Labelled pickers of the container and environment, for a form.
    func scopeFields(_ scope: SchemaScope) -> String {
        func options(_ values: [String], _ chosen: String) -> String {
            values.map { "<option\($0 == chosen ? " selected" : "")>\(ConsoleFormat.escape($0))</option>" }.joined()
        }
        return """
            <label>Container <select name=container>\(options(self.configuration.containers.sorted(), scope.container))</select></label>
            <label>Environment <select name=environment>\(options(SchemaScope.environments, scope.environment))</select></label>
            """
    }

    /// `key=value&…`, each part percent-encoded, for a link (escape it for HTML as well).
    static func query(_ pairs: KeyValuePairs<String, String>) -> String {
        pairs.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
    }

    func recordLink(_ scope: SchemaScope, zone: String, recordName: String, text: String? = nil) -> String {
        let query = Self.query(["container": scope.container, "environment": scope.environment, "zone": zone, "name": recordName])
        return "<a href=\"/console/public/record?\(ConsoleFormat.escape(query))\">\(ConsoleFormat.escape(text ?? recordName))</a>"
    }

    func status(_ summary: PublicRecordSummary) -> String { Self.status(deleted: summary.deleted, deprecated: summary.deprecated) }

    /// Canonical data is deprecated, never deleted; a record's tombstone says deleted.
    static func status(deleted: Bool, deprecated: Bool) -> String { deleted ? "deleted" : deprecated ? "deprecated" : "live" }

    func publicRecords(_ request: Request, _ session: ConsoleSession, _ logger: Logger) async throws -> Response {
        let scope = self.scope(of: request)
        let type = request.uri.queryParameters["type"].map(String.init) ?? ""
        let text = String((request.uri.queryParameters["q"].map(String.init) ?? "").prefix(200))
        let records = self.dependencies.records
        let types = try await records.publicRecordTypes(in: scope, logger: logger)
        let found = try await records.searchPublicRecords(in: scope, recordType: type, containing: text, logger: logger)
        let typeOptions = types.map { row in
            "<option value=\"\(ConsoleFormat.escape(row.recordType))\"\(row.recordType == type ? " selected" : "")>"
                + "\(ConsoleFormat.escape(row.recordType)) (\(row.count))</option>"
        }.joined()
        let rows = found.map { record in
            """
            <tr><td>\(ConsoleFormat.escape(record.recordType))</td><td>\(ConsoleFormat.escape(record.title ?? ""))</td>\
            <td>\(self.recordLink(scope, zone: record.zone, recordName: record.recordName))</td><td>\(ConsoleFormat.escape(record.zone))</td>\
            <td>\(ConsoleFormat.date(record.modified.timestamp))</td><td>\(self.status(record))</td></tr>
            """
        }.joined()
        let changes = Self.query(["container": scope.container, "environment": scope.environment])
        return self.html(
            "Public data",
            """
            <h1>Public data</h1>
            <form method=get action="/console/public" role=search><div class=row>\(self.scopeFields(scope))
            <label>Record type <select name=type><option value="">Any</option>\(typeOptions)</select></label>
            <label>Name or text contains <input name=q value="\(ConsoleFormat.escape(text))" autofocus></label>
            <button>Search</button></div></form>
            <p><a href="/console/public/changes?\(ConsoleFormat.escape(changes))">The change log of the public database</a></p>
            <table><caption>\(found.count) record(s)\(found.count == 50 ? " (the first 50)" : "")</caption>
            <thead><tr><th scope=col>Type</th><th scope=col>Name</th><th scope=col>Record name</th><th scope=col>Zone</th>\
            <th scope=col>Modified</th><th scope=col>Status</th></tr></thead><tbody>\(rows)</tbody></table>
            """, session: session)
    }

    func publicRecord(_ request: Request, _ session: ConsoleSession, notice: (text: String, error: Bool)?, _ logger: Logger) async throws -> Response
    {
        try await self.publicRecord(
            self.scope(of: request), zone: request.uri.queryParameters["zone"].map(String.init) ?? defaultZoneName,
            recordName: request.uri.queryParameters["name"].map(String.init) ?? "", session, notice: notice, logger)
    }

    func publicRecord(
        _ scope: SchemaScope, zone: String, recordName: String, _ session: ConsoleSession, notice: (text: String, error: Bool)?, _ logger: Logger
    ) async throws -> Response {
        guard
            let (record, referrers) = try await self.dependencies.records.publicRecord(in: scope, zone: zone, recordName: recordName, logger: logger)
        else {
            var response = self.html(
                "Not found",
                "<h1>Not found</h1><p>\(ConsoleFormat.escape(zone)) of the public database has no record \(ConsoleFormat.escape(recordName)).</p>",
                session: session)
            response.status = .notFound
            return response
        }
        let schema = try await self.dependencies.records.deployedSchema(in: scope, logger: logger)
        let declared = schema?.recordTypes[record.recordType]?.fields ?? [:]
        let fields = record.fields.sorted { $0.key < $1.key }.map { name, value in
            """
            <tr><th scope=row>\(ConsoleFormat.escape(name))</th><td>\(value.type.rawValue)</td><td>\(declared[name]?.owner.rawValue ?? "undeclared")</td>\
            <td>\(self.display(value, scope: scope, zone: zone))</td></tr>
            """
        }.joined()
        let referring = referrers.map { other in
            let dates = other.fields.filter { $0.value.type == .timestamp }.sorted { $0.key < $1.key }.map { name, value in
                "\(ConsoleFormat.escape(name)) \(value.value.int64Value.map(ConsoleFormat.date) ?? "")"
            }
            return """
                <tr><td>\(ConsoleFormat.escape(other.recordType))</td><td>\(ConsoleFormat.escape(other.fields["name"]?.value.stringValue ?? ""))</td>\
                <td>\(self.recordLink(scope, zone: zone, recordName: other.recordName))</td><td>\(dates.joined(separator: "; "))</td></tr>
                """
        }.joined()
        let title = record.fields["name"]?.value.stringValue ?? record.recordName
        let editable = declared.filter { $0.value.owner == .system && [.string, .int64, .double, .timestamp].contains($0.value.fieldType) }.keys
            .sorted()
        var edit = ""
        if self.publicData != nil, !record.deleted, !editable.isEmpty {
            edit = """
                <section aria-labelledby=edit><h2 id=edit>Change a system field</h2>
                <p>The change goes through the import's merge: a new name keeps the old one as an alias; immutable and user fields cannot change. \
                You see what it would change and confirm it. The next import of a dataset that still has the old value changes it back: fix the dataset too.</p>
                <form method=post action="/console/public/edit">\(self.formToken(session))<input type=hidden name=action value=preview>
                \(self.hiddenRecordFields(scope, zone: zone, recordName: record.recordName))
                <div class=row><label>Field <select name=field>\(editable.map { "<option>\(ConsoleFormat.escape($0))</option>" }.joined())</select></label>
                <label>New value (dates as YYYY-MM-DD) <input name=value required maxlength=500></label><button>Preview the change</button></div></form>
                </section>
                """
        }
        let state = Self.status(deleted: record.deleted, deprecated: record.fields["deprecatedAt"] != nil)
        return self.html(
            title,
            """
            <h1>\(ConsoleFormat.escape(title))</h1>
            \(self.notice(notice?.text, error: notice?.error ?? false))
            <dl><dt>Record name</dt><dd><code>\(ConsoleFormat.escape(record.recordName))</code> (never changes)</dd>
            <dt>Type</dt><dd>\(ConsoleFormat.escape(record.recordType))</dd><dt>Zone</dt><dd>\(ConsoleFormat.escape(zone)) of \(ConsoleFormat.escape(scope.description))</dd>
            <dt>Status</dt><dd>\(state)</dd>
            <dt>Created</dt><dd>\(ConsoleFormat.dateTime(record.created.timestamp)) by \(ConsoleFormat.escape(record.created.deviceID))</dd>
            <dt>Last changed</dt><dd>\(ConsoleFormat.dateTime(record.modified.timestamp)) by \(ConsoleFormat.escape(record.modified.deviceID)), change \(record.changeSeq)</dd></dl>
            <table><caption>Fields</caption><thead><tr><th scope=col>Field</th><th scope=col>Type</th><th scope=col>Owner</th><th scope=col>Value</th></tr></thead>
            <tbody>\(fields)</tbody></table>
            <table><caption>Records that refer to it: its aliases (old names), venues and teams, with their dates</caption>
            <thead><tr><th scope=col>Type</th><th scope=col>Name</th><th scope=col>Record name</th><th scope=col>Dates</th></tr></thead><tbody>\(referring)</tbody></table>
            \(edit)
            """, session: session)
    }

    func hiddenRecordFields(_ scope: SchemaScope, zone: String, recordName: String) -> String {
        [("container", scope.container), ("environment", scope.environment), ("zone", zone), ("name", recordName)].map {
            "<input type=hidden name=\($0.0) value=\"\(ConsoleFormat.escape($0.1))\">"
        }.joined()
    }

    /// A field's value as text; a reference links to its record.
    func display(_ value: FieldValue, scope: SchemaScope, zone: String) -> String {
        switch (value.type, value.value) {
        case (.timestamp, .int(let ms)): return ConsoleFormat.dateTime(ms)
        case (.reference, let reference):
            guard let name = reference["recordName"]?.stringValue else { break }
            return self.recordLink(scope, zone: zone, recordName: name)
        case (_, .string(let text)): return ConsoleFormat.escape(text)
        case (_, .int(let number)): return "\(number)"
        case (_, .double(let number)): return "\(number)"
        default: break
        }
        return "<code>\(ConsoleFormat.escape(JSONWriter.encode(value.value)))</code>"
    }

    func editPublicRecord(_ session: ConsoleSession, _ form: [String: String], _ logger: Logger) async throws -> Response {
        guard let publicData = self.publicData else { return self.refused("This server has no editor of public data.", signIn: false) }
        let scope = self.scope(container: form["container"], environment: form["environment"])
        let zone = form["zone"] ?? defaultZoneName
        let recordName = form["name"] ?? ""
        let field = form["field"] ?? ""
        let value = form["value"] ?? ""
        let apply = form["action"] == "apply"
        guard !zone.hasPrefix(UnlistedZone.prefix) else {
            return self.refused("Records of unlisted zones are people's, not public data.", signIn: false)
        }
        let changes = try await publicData.edit(
            recordName: recordName, zone: zone, field: field, value: value, in: scope, by: session.account.name, dryRun: !apply, logger: logger)
        let lines = changes.lines.map(ConsoleFormat.escape).joined(separator: "\n")
        if let refusal = changes.refused.first {
            return try await self.publicRecord(
                scope, zone: zone, recordName: recordName, session, notice: ("Refused: " + ConsoleFormat.escape(refusal), true), logger)
        }
        if apply || changes.lines.isEmpty {
            let text =
                changes.lines.isEmpty ? "Nothing to change: \(ConsoleFormat.escape(field)) already has that value." : "Applied:<pre>\(lines)</pre>"
            return try await self.publicRecord(scope, zone: zone, recordName: recordName, session, notice: (text, false), logger)
        }
        return self.html(
            "Confirm the change",
            """
            <h1>Confirm the change</h1>
            <p>Setting \(ConsoleFormat.escape(field)) of \(self.recordLink(scope, zone: zone, recordName: recordName)) to \
            “\(ConsoleFormat.escape(value))” makes these changes, in one transaction:</p>
            <pre id=preview>\(lines)</pre>
            <form method=post action="/console/public/edit">\(self.formToken(session))<input type=hidden name=action value=apply>
            \(self.hiddenRecordFields(scope, zone: zone, recordName: recordName))
            <input type=hidden name=field value="\(ConsoleFormat.escape(field))"><input type=hidden name=value value="\(ConsoleFormat.escape(value))">
            <button>Apply the change</button></form>
            <p>\(self.recordLink(scope, zone: zone, recordName: recordName, text: "Cancel"))</p>
            """, session: session)
    }

    func publicChanges(_ request: Request, _ session: ConsoleSession, _ logger: Logger) async throws -> Response {
        let scope = self.scope(of: request)
        let changes = try await self.dependencies.records.publicChanges(in: scope, logger: logger)
        let rows = changes.map { change in
            """
            <tr><td class=n>\(change.changeSeq)</td><td>\(ConsoleFormat.dateTime(change.modified.timestamp))</td><td>\(ConsoleFormat.escape(change.zone))</td>\
            <td>\(ConsoleFormat.escape(change.recordType))</td><td>\(self.recordLink(scope, zone: change.zone, recordName: change.recordName))</td>\
            <td>\(self.status(change))</td><td>\(ConsoleFormat.escape(change.modified.deviceID))</td></tr>
            """
        }.joined()
        return self.html(
            "Change log",
            """
            <h1>Change log of the public database</h1>
            <form method=get action="/console/public/changes" class=row>\(self.scopeFields(scope))<button>Show</button></form>
            <table><caption>The \(changes.count) newest changes, newest first: what devices receive as deltas (a record's newest version only)</caption>
            <thead><tr><th scope=col>Change</th><th scope=col>When</th><th scope=col>Zone</th><th scope=col>Type</th><th scope=col>Record</th>\
            <th scope=col>Now</th><th scope=col>By</th></tr></thead><tbody>\(rows)</tbody></table>
            """, session: session)
    }
}
