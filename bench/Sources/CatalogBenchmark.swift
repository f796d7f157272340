import Canon
import CloudCore
import Foundation
import SportsDomain

/// What a feed's write costs the next reader of the canonical catalog (bench/README.md, "Feeds"): the catalog of the
/// whole dataset, updated in memory with one changed game of each kind, as the first request after a feed's write
/// does it. No server and no database: the update is all the reader waits for beyond reading the changed records.
struct CatalogBenchmark {
    let datasetPath: String
    let rounds: Int

    func run() throws {
        let dataset = try CanonicalDataset.load(from: self.datasetPath)
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_canonicalImport", deviceID: "bench")
        func record(_ draft: RecordDraft) -> Record {
            Record(recordName: draft.recordName, recordType: draft.recordType, changeSeq: 1, fields: draft.fields, created: stamp, modified: stamp)
        }
        let games = try dataset.gameRecords().values.flatMap { $0 }.map(record)
        let records = try dataset.records().map(record) + games
        var started = ContinuousClock.now
        let catalog = CanonicalCatalog(records: records)
        print("catalog of \(records.count) records (\(games.count) games) built in \(Self.milliseconds(ContinuousClock.now - started)) ms")

        // Each kind of change a feed writes, to a different game of the current seasons each round.
        let current = games.filter { ($0.fields["season"]?.value.int64Value ?? 0) >= 2026 }
        let kinds: [(String, (Record, Int) -> Record)] = [
            (
                "score",
                { game, round in
                    var changed = game
                    (changed.fields["status"], changed.fields["homeScore"], changed.fields["awayScore"]) = (.string("live"), .int(round % 9), .int(1))
                    return changed
                }
            ),
            (
                "start time moved",
                { game, round in
                    var changed = game
                    let start = (game.fields["startTime"]?.value.int64Value ?? 0) + Int64(1 + round % 5) * 1_800_000
                    changed.fields["startTime"] = FieldValue(type: .timestamp, value: .int(start))
                    return changed
                }
            ),
            (
                "provider id added",
                { game, round in
                    var changed = game
                    changed.fields["feedIds"] = FieldValue(type: .stringList, value: .array([.string("espn:\(900_000_000 + round)")]))
                    return changed
                }
            ),
            (
                "game added",
                { game, round in
                    var added = game
                    added.recordName = game.recordName + "_added_\(round)"
                    added.fields["sourceGameId"] = .string("added_\(round)")
                    return added
                }
            ),
        ]
        // The scoreboard's cards: every game of a busy day (MLB, NBA, NHL and MLS in season) with its teams' records
        // and standings, counted from the seasons' finals by the first answer after a change of the games (a new
        // catalog), then looked up by the answers after it.
        let busy = CivilDate(year: 2025, month: 4, day: 12)!
        let day = catalog.games.games(on: busy...busy)
        for (name, fresh) in [("counted", true), ("again", false)] {
            var times: [Duration] = []
            for _ in 0..<self.rounds {
                let asked = fresh ? catalog.updating(with: [])! : catalog
                started = ContinuousClock.now
                precondition(asked.cards(of: day).count == day.count)
                times.append(ContinuousClock.now - started)
            }
            print("cards of \(busy)'s \(day.count) games, \(name): \(Self.percentiles(times))")
        }

        for (name, change) in kinds {
            var times: [Duration] = []
            for round in 0..<self.rounds {
                let changed = change(current[(round * 7919) % current.count], round)
                started = ContinuousClock.now
                let updated = catalog.updating(with: [changed])
                times.append(ContinuousClock.now - started)
                precondition(updated?.games.game(changed.recordName) != nil)
            }
            print("catalog update, \(name): \(Self.percentiles(times)), max \(Self.milliseconds(times.max()!)) ms (\(self.rounds) updates)")
        }
    }

    /// `p50 … ms, p99 … ms` of `times`.
    static func percentiles(_ times: [Duration]) -> String {
        let sorted = times.sorted()
        return
            "p50 \(Self.milliseconds(sorted[sorted.count / 2])) ms, p99 \(Self.milliseconds(sorted[min(sorted.count - 1, sorted.count * 99 / 100)])) ms"
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.3f", Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15)
    }
}
