import CloudCore
import CloudPostgres
import Foundation
import Hummingbird
import Logging

/// The schema of a container's environment: record types with their fields, owners and indexes, the deployed
/// versions, and what a proposed schema would change (as `stadiumcloud schema diff`).
extension ConsoleController {
    func schemaPage(_ scope: SchemaScope, _ session: ConsoleSession, proposed: (text: String, result: String)? = nil, _ logger: Logger) async throws
        -> Response
    {
        let records = self.dependencies.records
        let schema = try await records.deployedSchema(in: scope, logger: logger)
        let versions = try await records.schemaVersions(in: scope, logger: logger).map { version in
            "<tr><td class=n>\(version.version)</td><td>\(ConsoleFormat.dateTime(version.deployedMs))</td><td class=n>\(version.recordTypes)</td></tr>"
        }.joined()
        let types = (schema?.recordTypes ?? [:]).sorted { $0.key < $1.key }.map { name, type in
            let fields = type.fields.sorted { $0.key < $1.key }.map { fieldName, field in
                "<li><code>\(ConsoleFormat.escape(fieldName))</code> \(ConsoleFormat.escape(field.type)), \(field.owner.rawValue)</li>"
            }.joined()
            let indexes = type.fields.sorted { $0.key < $1.key }.flatMap { fieldName, field -> [String] in
                (field.queryable ? ["\(fieldName) (queryable)"] : []) + (field.sortable ? ["\(fieldName) (sortable)"] : [])
                    + (field.searchable ? ["\(fieldName) (word search)"] : [])
            }.map(ConsoleFormat.escape).joined(separator: "<br>")
            let permissions = type.permissions.map { "read \($0.read.rawValue), create \($0.create.rawValue), write \($0.write.rawValue)" }
            return """
                <tr><th scope=row>\(ConsoleFormat.escape(name))</th><td>\(ConsoleFormat.escape(type.database))</td>\
                <td>\(type.database == "public" ? permissions ?? "operators write, everyone reads" : "the account's own")</td>\
                <td><ul>\(fields)</ul></td><td>\(indexes)</td></tr>
                """
        }.joined()
        return self.html(
            "Schema",
            """
            <h1>Schema</h1>
            <form method=get action="/console/schema" class=row>\(self.scopeFields(scope))<button>Show</button></form>
            <p>Development grows its schema as devices write (unless the server runs with <code>--no-just-in-time-schema</code>); production \
            changes only by <code>stadiumcloud schema deploy</code>. Field owners drive the merge: system fields come from the canonical import, \
            immutable fields never change, user fields are never overwritten.</p>
            <table><caption>Record types of \(ConsoleFormat.escape(scope.description))\(schema == nil ? ": no schema deployed" : "")</caption>
            <thead><tr><th scope=col>Type</th><th scope=col>Database</th><th scope=col>Permissions</th><th scope=col>Fields (type, owner)</th>\
            <th scope=col>Indexes</th></tr></thead><tbody>\(types)</tbody></table>
            <table><caption>Deployed versions (the newest is in force)</caption>
            <thead><tr><th scope=col>Version</th><th scope=col>Deployed</th><th scope=col>Record types</th></tr></thead><tbody>\(versions)</tbody></table>
            <section aria-labelledby=diff><h2 id=diff>Compare a proposed schema</h2>
            <form method=post action="/console/schema">\(self.formToken(session))
            <input type=hidden name=container value="\(ConsoleFormat.escape(scope.container))"><input type=hidden name=environment value="\(ConsoleFormat.escape(scope.environment))">
            <label>Proposed schema (JSON, as Resources/schema.json) <textarea name=schema rows=8 required>\(ConsoleFormat.escape(proposed?.text ?? ""))</textarea></label>
            <button>Compare with \(ConsoleFormat.escape(scope.description))</button></form>
            \(proposed?.result ?? "")</section>
            """, session: session)
    }

    func diffSchema(_ session: ConsoleSession, _ form: [String: String], _ logger: Logger) async throws -> Response {
        let scope = self.scope(container: form["container"], environment: form["environment"])
        let text = form["schema"] ?? ""
        let result: String
        do {
            let proposed = try Schema.parse(Array(text.utf8))
            let current = try await self.dependencies.records.deployedSchema(in: scope, logger: logger) ?? Schema(recordTypes: [:])
            let changes = current.changes(to: proposed)
            func list(_ items: [String]) -> String { "<ul>" + items.map { "<li>\(ConsoleFormat.escape($0))</li>" }.joined() + "</ul>" }
            result =
                changes.isEmpty
                ? "<p role=status id=schema-diff>No difference: the proposed schema is the one in force.</p>"
                : """
                <div role=status id=schema-diff><h3>Additive (deploy would apply)</h3>\(list(changes.additive))
                <h3>Destructive (deploy refuses)</h3>\(list(changes.destructive))</div>
                """
        } catch let error as CloudError {
            result = "<p class=error role=alert>The proposed schema cannot be read: \(ConsoleFormat.escape(error.reason))</p>"
        }
        return try await self.schemaPage(scope, session, proposed: (text, result), logger)
    }
}
