import ArgumentParser
import Foundation
import StadiumCloudClient

struct Polls: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Trip polls with friends: create one, share its code, vote, see the tally (online).",
        subcommands: [Create.self, Vote.self, Show.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a poll; prints its share code.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The question.") var title: String
        @Option(help: "An option (2 to 20, repeatable).") var option: [String]
        @Option(help: "A trip summary per option, in order (repeatable).") var summary: [String] = []
        @Option(help: "When the poll closes, YYYY-MM-DD.") var closes: String?

        func run() async throws {
            try await reporting {
                let code = try await self.options.open().createPoll(
                    title: self.title, options: self.option, summaries: self.summary, closesAt: try self.closes.map(parseDate))
                print(code)
            }
        }
    }

    struct Vote: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Vote in a poll (voting again changes your vote).")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The poll's share code.") var code: String
        @Argument(help: "The option's number, from 1.") var option: Int

        func run() async throws {
            try await reporting {
                try await self.options.open().vote(inPoll: self.code, option: self.option - 1)
                print("voted")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A poll and its tally.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The poll's share code.") var code: String

        func run() async throws {
            try await reporting {
                let poll = try await self.options.open().poll(self.code)
                print(poll.title + (poll.closesAt.map { "  (closes \(formatDate($0)))" } ?? ""))
                for (index, option) in poll.options.enumerated() {
                    let summary = poll.optionSummaries.indices.contains(index) ? "  \(poll.optionSummaries[index])" : ""
                    print("\(poll.myVote == index ? "✔" : " ") \(index + 1). \(option): \(poll.votes[index]) vote(s)\(summary)")
                }
            }
        }
    }
}
