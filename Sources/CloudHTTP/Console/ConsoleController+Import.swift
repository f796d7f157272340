import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Hummingbird
import Logging
import Synchronization

/// The console's import of a dataset folder, one at a time per process: what runs, or ran last, with its progress.
final class ConsoleImports: Sendable {
    struct Job: Sendable {
        var operatorName: String
        var path: String
        var scope: SchemaScope
        var dryRun: Bool
        var startedMs: Int64
        var step = 0
        var steps = 1
        var message = "starting"
        var endedMs: Int64?
        /// What it changed; nil once ended means it failed.
        var changes: PublicDataChanges?
    }

    private let state = Mutex<Job?>(nil)
    private let clock: ServerClock
    private let changes: StateSignal

    init(clock: ServerClock, changes: StateSignal) { (self.clock, self.changes) = (clock, changes) }

    var current: Job? { self.state.withLock { $0 } }

    /// Starts `job`, running `work` in the background, unless an import is running; false when one is.
    func start(
        _ job: Job, logger: Logger,
        _ work: @escaping @Sendable (_ progress: @escaping @Sendable (Int, Int, String) -> Void) async throws -> PublicDataChanges
    ) -> Bool {
        let started = self.state.withLock { state in
            if let running = state, running.endedMs == nil { return false }
            state = job
            return true
        }
        guard started else { return false }
        // Not tied to the request: the import goes on when the operator leaves the page. It is one transaction, so
        // a shutdown that cuts it short writes nothing.
        Task {
            let outcome: PublicDataChanges?
            do {
                outcome = try await work { step, steps, message in
                    self.state.withLock { state in
                        state?.step = step
                        state?.steps = steps
                        state?.message = message
                    }
                    self.changes.changed()
                }
            } catch {
                logger.error("console import failed: \(String(reflecting: error))")
                outcome = nil
            }
            self.state.withLock { state in
                state?.endedMs = self.clock.now
                state?.changes = outcome
            }
            self.changes.changed()
        }
        return true
    }
}

extension ConsoleController {
    func importPage(_ request: Request, _ session: ConsoleSession, _ logger: Logger) async throws -> Response {
        guard let publicData = self.publicData else {
            return self.html("Import", "<h1>Import</h1><p>This server has no dataset import.</p>", session: session)
        }
        let job = self.imports.current
        let scope = job?.scope ?? self.scope(of: request)
        let running = job.map { $0.endedMs == nil } ?? false
        return self.html(
            "Import",
            """
            <h1>Import canonical data</h1>
            <p>A dataset folder on the server (as <code>stadiumcloud import</code> reads it) is merged into the public database in one \
            transaction: new records are created, changed system fields updated (a rename keeps the old name as an alias), records missing \
            from the source deprecated, never deleted. A dry run first shows what would change.</p>
            <form method=post action="/console/import">\(self.formToken(session))<fieldset><legend>A folder on the server</legend>
            <div class=row>\(self.scopeFields(scope))</div><div class=row>
            <label>Dataset folder <input name=path value="\(ConsoleFormat.escape(job?.path ?? publicData.defaultDatasetPath))" required size=40></label>
            <button name=action value=dry-run\(running ? " disabled" : "")>Dry run</button></div></fieldset></form>
            <form method=post action="/console/import/upload" enctype="multipart/form-data">\(self.formToken(session))
            <fieldset><legend>A folder from this computer (at most \(Self.maxUploadBytes >> 20) MiB)</legend><div class=row>\(self.scopeFields(scope))</div>
            <div class=row><label>Dataset folder <input type=file name=dataset webkitdirectory multiple required></label>
            <button\(running ? " disabled" : "")>Upload and dry run</button></div></fieldset></form>
            \(job.map { self.importStatus($0, session) } ?? "")
            """, session: session, refreshSeconds: running ? 1 : nil)
    }

    func importStatus(_ job: ConsoleImports.Job, _ session: ConsoleSession) -> String {
        let what = job.dryRun ? "Dry run" : "Import"
        let header =
            "\(what) of \(ConsoleFormat.escape(job.path)) into \(ConsoleFormat.escape(job.scope.description)), started by \(ConsoleFormat.escape(job.operatorName))"
        guard let ended = job.endedMs else {
            return """
                <section aria-labelledby=job><h2 id=job>\(header)</h2>
                <p><label for=progress>\(ConsoleFormat.escape(job.message))</label>
                <progress id=progress value=\(job.step) max=\(job.steps)>\(job.step) of \(job.steps)</progress></p>
                <p role=status>Step \(job.step) of \(job.steps); this page refreshes every second.</p></section>
                """
        }
        let seconds = String(format: "%.1f", Double(ended - job.startedMs) / 1000)
        guard let changes = job.changes else {
            return
                "<section aria-labelledby=job><h2 id=job>\(header)</h2><p class=error role=alert>Failed after \(seconds) s: see the server's log.</p></section>"
        }
        if !changes.refused.isEmpty {
            return """
                <section aria-labelledby=job><h2 id=job>\(header)</h2><p class=error role=alert>Refused, nothing was written:</p>
                <ul>\(changes.refused.map { "<li>\(ConsoleFormat.escape($0))</li>" }.joined())</ul></section>
                """
        }
        let counts = ["created", "updated", "deprecated", "alias added"].map { kind in
            "<tr><td>\(kind)</td><td class=n>\(changes.counts[kind] ?? 0)</td></tr>"
        }.joined()
        let shown = changes.lines.prefix(500).map(ConsoleFormat.escape).joined(separator: "\n")
        var apply = ""
        if job.dryRun, !changes.lines.isEmpty {
            apply = """
                <form method=post action="/console/import">\(self.formToken(session))<input type=hidden name=path value="\(ConsoleFormat.escape(job.path))">
                <input type=hidden name=container value="\(ConsoleFormat.escape(job.scope.container))">\
                <input type=hidden name=environment value="\(ConsoleFormat.escape(job.scope.environment))">
                <button name=action value=apply>Apply \(changes.lines.count == 1 ? "this change" : "these \(changes.lines.count) changes")</button></form>
                """
        }
        let summary =
            changes.lines.isEmpty
            ? "Nothing \(job.dryRun ? "would change" : "changed"): the public database already matches the dataset."
            : job.dryRun ? "The dry run took \(seconds) s and wrote nothing." : "Applied \(changes.lines.count) changes in \(seconds) s."
        return """
            <section aria-labelledby=job><h2 id=job>\(header)</h2>
            <p role=status id=import-result>\(summary)</p>
            <progress value=1 max=1 aria-label="\(what) finished">done</progress>
            <table><caption>Changes by kind</caption><thead><tr><th scope=col>Kind</th><th scope=col>Records</th></tr></thead><tbody>\(counts)</tbody></table>
            \(apply)
            <pre aria-label="Changes, one per line">\(shown)\(changes.lines.count > 500 ? "\n… and \(changes.lines.count - 500) more" : "")</pre></section>
            """
    }

    func startImport(_ session: ConsoleSession, _ form: [String: String], _ logger: Logger) async throws -> Response {
        guard let publicData = self.publicData else { return self.refused("This server has no dataset import.", signIn: false) }
        let path = form["path"].flatMap { $0.isEmpty ? nil : $0 } ?? publicData.defaultDatasetPath
        return self.startImport(
            of: path, into: self.scope(container: form["container"], environment: form["environment"]), dryRun: form["action"] != "apply", publicData,
            session, logger)
    }

    func startImport(
        of path: String, into scope: SchemaScope, dryRun: Bool, _ publicData: any PublicDataEditor, _ session: ConsoleSession, _ logger: Logger
    ) -> Response {
        let job = ConsoleImports.Job(operatorName: session.account.name, path: path, scope: scope, dryRun: dryRun, startedMs: self.configuration.clock.now)
        let started = self.imports.start(job, logger: logger) { progress in
            try await publicData.importDataset(at: path, into: scope, dryRun: dryRun, logger: logger, progress: progress)
        }
        guard started else { return self.refused("An import is already running; wait for it to end.", signIn: false) }
        logger.notice(
            "an operator started an import in the console",
            metadata: ["operator": "\(session.account.name)", "path": "\(path)", "dryRun": "\(dryRun)", "scope": "\(scope)"])
        return Response(status: .seeOther, headers: [.location: "/console/import", .cacheControl: "no-store"])
    }

    static let maxUploadBytes = 64 << 20
    /// Where uploaded datasets are kept, one folder each; the newest stays for its apply, older ones are removed.
    static let uploads = FileManager.default.temporaryDirectory.appendingPathComponent("stadiumcloud-console-uploads")

    /// A dataset folder uploaded from the browser (the files with their paths below the chosen folder), kept on the
    /// server and dry-run like a folder named on the import form. Read whole: at most `maxUploadBytes`.
    func uploadDataset(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        guard let (_, session) = try await self.session(of: request, context) else { return Self.toSignIn }
        guard let publicData = self.publicData else { return self.refused("This server has no dataset import.", signIn: false) }
        guard let boundary = request.headers[.contentType].flatMap(MultipartFileStream<RequestBody>.boundary(of:)) else {
            return self.refused("The upload is not a multipart form.", signIn: false)
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: Self.maxUploadBytes)
        } catch {
            return self.refused("The upload is larger than \(Self.maxUploadBytes >> 20) MiB: copy the folder to the server instead.", signIn: false)
        }
        let form: MultipartForm
        do {
            form = try MultipartForm(Array(body.readableBytesView), boundary: boundary)
        } catch let error as CloudError {
            return self.refused("The upload cannot be read: \(error.reason).", signIn: false)
        }
        guard form.field("formToken") == session.formToken else { return self.refused("The form did not come from this console.", signIn: false) }
        let files = form.parts.filter { $0.filename?.isEmpty == false }
        guard let paths = Self.datasetPaths(files.map { $0.filename! }) else {
            return self.refused("Upload a folder of .json files (names of letters, digits, '_', '-' and '.').", signIn: false)
        }
        let folder = Self.uploads.appendingPathComponent(UUID().uuidString)
        for (file, path) in zip(files, paths) {
            let url = folder.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.body).write(to: url)
        }
        let response = self.startImport(
            of: folder.path, into: self.scope(container: form.field("container"), environment: form.field("environment")), dryRun: true,
            publicData, session, context.logger)
        // Only the upload an import now reads is kept (this one, or the one still running).
        let keep = self.imports.current?.path
        for old in (try? FileManager.default.contentsOfDirectory(atPath: Self.uploads.path)) ?? []
        where Self.uploads.appendingPathComponent(old).path != keep {
            try? FileManager.default.removeItem(at: Self.uploads.appendingPathComponent(old))
        }
        return response
    }

    /// Where each uploaded file goes in the kept folder: its path below the folder the operator chose (a folder
    /// upload names every file `folder/…`), each part checked so nothing lands outside; nil when a name is not safe,
    /// not `.json`, or there are no files or more than 1,000.
    static func datasetPaths(_ filenames: [String]) -> [String]? {
        let split = filenames.map { $0.split(separator: "/").map(String.init) }
        guard !split.isEmpty, split.count <= 1000 else { return nil }
        let root = split[0].count > 1 ? split[0][0] : nil
        let relative = split.map { parts in root != nil && parts.count > 1 && parts[0] == root ? Array(parts.dropFirst()) : parts }
        for parts in relative {
            guard !parts.isEmpty, parts.count <= 3, parts.last!.hasSuffix(".json"),
                parts.allSatisfy({ part in
                    !part.hasPrefix(".") && part.count <= 100 && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }
                })
            else { return nil }
        }
        return relative.map { $0.joined(separator: "/") }
    }
}
