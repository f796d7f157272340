import CloudCore
import CloudPostgres
import CloudRuntime
import Crypto
import Logging
import NIOCore

/// Makes a signed `PublicSnapshot` of public zones: what a device's first sync of them would fetch, with the change
/// token it would end at, so a device that starts from the snapshot then fetches only what changed since. Record
/// types readable only by signed-in people are left out: a snapshot ships inside an app, to anyone.
public func makePublicSnapshot(
    container: String, environment: String, zones requested: [String]?, records: RecordStore, signingKey: P256.Signing.PrivateKey,
    logger: Logger
) async throws -> (file: [UInt8], zones: Int, records: Int) {
    let database = try await records.database(container: container, environment: environment, scope: .public, owner: nil, logger: logger)
    var zones = requested ?? []
    if requested == nil {
        zones = try await records.listZones(in: database, logger: logger).map(\.zoneName).filter { !UnlistedZone.contains($0) }
    }
    let schema = try await records.deployedSchema(in: SchemaScope(container: container, environment: environment), logger: logger)
    let hidden = schema?.readableOnlySignedIn ?? []
    var read: [(zone: String, token: String, records: [RecordSnapshot])] = []
    for zone in zones {
        // Page by page as a device would; a record deleted while the pages are read goes again.
        var current: [String: RecordSnapshot] = [:]
        var order: [String] = []
        var token: String?
        while true {
            let page = try await records.changes(
                zoneName: zone, since: token, limit: nil, desiredKeys: nil, recordTypes: nil, storedAnswers: true, in: database, logger: logger)
            for record in page.records {
                if record.deleted {
                    current[record.recordName] = nil
                } else {
                    if current[record.recordName] == nil { order.append(record.recordName) }
                    current[record.recordName] = record
                }
            }
            token = page.syncToken
            if !page.moreComing { break }
        }
        let kept = order.compactMap { current[$0] }.filter { !hidden.contains($0.recordType) }
        read.append((zone, token ?? "", kept))
    }
    var writer = WireWriter()
    writer.object { writer in
        writer.json.key("format"); writer.json.string(PublicSnapshot.format)
        writer.json.key("container"); writer.json.string(container)
        writer.json.key("environment"); writer.json.string(environment)
        writer.json.key("createdAt"); writer.json.int(records.clock.now)
        writer.list("zones") { writer in
            for zone in read {
                writer.object { writer in
                    writer.json.key("zoneName"); writer.json.string(zone.zone)
                    writer.json.key("syncToken"); writer.json.string(zone.token)
                    writer.list("records") { writer in
                        for record in zone.records { writer.record(record, zoneName: zone.zone, owner: "_defaultOwner") }
                    }
                }
            }
        }
    }
    let payload = try Deflater().deflate(ByteBuffer(bytes: writer.json.bytes), finish: true)
    return (try PublicSnapshot.file(payload: Array(payload.readableBytesView), signedWith: signingKey), zones.count, read.map(\.records.count).reduce(0, +))
}
