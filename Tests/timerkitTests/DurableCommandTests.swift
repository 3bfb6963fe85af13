import Foundation
import Testing
import TimerKit
import TimerKitDurable

@testable import timerkit

#if canImport(TimerKitPostgres)
import TimerKitPostgres
#endif

/// `timerkit durable`, run as a person runs it: the built binary against a real SQLite file that
/// the test fills through `DurableTimers` (one timer in each status: ``DurableFixture``), and
/// against PostgreSQL when `TIMERKIT_POSTGRES_URL` names a server.
@Suite("timerkit durable", .timeLimit(.minutes(3)))
struct DurableCommandTests {
    /// Runs `timerkit durable ARGUMENTS` in UTC (the table's times are local).
    func durable(_ arguments: [String], environment: [String: String] = [:]) async throws -> ToolRunner.Outcome {
        try await ToolRunner.run(["durable"] + arguments, environment: ["TZ": "UTC", "TIMERKIT_DB": ""].merging(environment) { $1 })
    }

    /// The JSON objects of `--json`'s lines.
    func jsonLines(_ output: String) throws -> [[String: Any]] {
        try output.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    // MARK: Help and bad input

    @Test("timerkit durable and each subcommand have help that reads at 80 columns, with the exit statuses")
    func help() async throws {
        let top = try await ToolRunner.run(["--help"], environment: ["COLUMNS": "80"])
        #expect(top.output.contains("timerkit durable ls") && top.output.contains("69"), "\(top.output)")
        for subcommand in [
            [], ["ls"], ["show"], ["why"], ["plan"], ["history"], ["stats"], ["cancel"], ["retry"], ["fire"], ["pause"], ["resume"], ["schema"], ["migrate"]
        ] {
            let help = try await durable(subcommand + ["--help"], environment: ["COLUMNS": "80"])
            #expect(help.status == 0, "\(subcommand): \(help.error)")
            let long = help.output.split(separator: "\n").filter { $0.count > 80 }
            #expect(long.isEmpty, "timerkit durable \(subcommand.joined()) --help: \(long)")
        }
        let group = try await durable(["--help"])
        for status in ["0 ", "1 ", "64 ", "69 "] { #expect(group.output.contains("\n  \(status)"), "exit status \(status) in: \(group.output)") }
    }

    @Test(
        "Bad input gets one line naming the problem, the subcommand's usage, and exit 64",
        arguments: [
            (["ls"], "no database: give --db"),
            (["ls", "--db", "ftp://host/x"], "unknown database 'ftp://host/x'"),
            (["ls", "--db", "sqlite:"], "needs a path"),
            (["ls", "--db", "/tmp/x.sqlite", "--status", "asleep"], "unknown status 'asleep'"),
            (["ls", "--db", "/tmp/x.sqlite", "--due-before", "soonish"], "invalid date 'soonish'"),
            (["ls", "--db", "/tmp/x.sqlite", "--limit", "0"], "--limit must be 1 to 10000"),
            (["ls", "--db", "/tmp/x.sqlite", "--after", "!!"], "invalid cursor '!!'"),
            (["ls", "--db", "/tmp/x.sqlite", "--timeout", "0s"], "--timeout must be more than zero"),
            (["show", "--db", "/tmp/x.sqlite"], "Missing expected argument"),
            (["cancel", "--db", "/tmp/x.sqlite"], "give the keys of the timers, or a filter"),
            (["cancel", "--db", "/tmp/x.sqlite", "k", "--handler", "h"], "keys or a filter, not both"),
            (["cancel", "--db", "/tmp/x.sqlite", "--status", "parked"], "run it at a terminal to confirm, or add --yes"),
            (["retry", "--db", "/tmp/x.sqlite", "--handler", "h"], "run it at a terminal to confirm, or add --yes"),
            (["schema", "--from", "1"], "--from goes with --sql"),
            (["schema", "--db", "/tmp/x.sqlite", "--sql", "--from", "99"], "--from must be 0 to"),
            (["schema", "--db", "/tmp/x.sqlite", "--sql"], "--sql is for PostgreSQL"),
            (["plan", "--db", "/tmp/x.sqlite", "k", "--count", "0"], "--count must be 1 to 1000"),
            (["plan", "--db", "/tmp/x.sqlite", "k", "--outage", "soon"], "invalid duration 'soon'"),
            (["history", "--db", "/tmp/x.sqlite", "k", "--limit", "0"], "--limit must be 1 to 10000"),
            (["stats", "--db", "/tmp/x.sqlite", "--late-by", "0s"], "--late-by must be more than zero"),
            (["pause", "--db", "/tmp/x.sqlite"], "give keys, --handler NAME or --namespace-wide"),
            (["resume", "--db", "/tmp/x.sqlite", "k", "--namespace-wide"], "give one of keys, --handler NAME and --namespace-wide"),
            (["serve", "--db", "/tmp/x.sqlite", "--listen", "nowhere"], "--listen must be HOST:PORT"),
            (["serve", "--db", "/tmp/x.sqlite", "--listen", "127.0.0.1:70000"], "--listen must be HOST:PORT")
        ])
    func badInput(arguments: [String], problem: String) async throws {
        let outcome = try await durable(arguments)
        #expect(outcome.status == 64, "\(outcome.error)")
        #expect(outcome.error.contains(problem), "\(outcome.error)")
        #expect(outcome.error.contains("Usage: timerkit durable"), "\(outcome.error)")
        #expect(!outcome.error.contains("Fatal error"))
    }

    @Test("A SQLite file that does not exist is reported with exit 69 and not created; TIMERKIT_DB stands in for --db")
    func missingFile() async throws {
        let fixture = try DurableFixture()
        defer { try? FileManager.default.removeItem(at: fixture.folder) }
        for arguments in [["ls", "--db", fixture.path], ["show", "--db", "sqlite:\(fixture.path)", "k"], ["cancel", "--db", fixture.path, "k"]] {
            let outcome = try await durable(arguments)
            #expect(outcome.status == 69, "\(arguments): \(outcome.error)")
            #expect(outcome.error.contains("no database at \(fixture.path)"), "\(outcome.error)")
            #expect(outcome.error.split(separator: "\n").count == 1, "one line: \(outcome.error)")
        }
        let fromEnvironment = try await durable(["ls"], environment: ["TIMERKIT_DB": "sqlite:\(fixture.path)"])
        #expect(fromEnvironment.status == 69 && fromEnvironment.error.contains("no database at \(fixture.path)"), "\(fromEnvironment.error)")
        #expect(!FileManager.default.fileExists(atPath: fixture.path))
    }

    // MARK: ls

    @Test("ls shows a table of every timer in key order, each in its status, with its next deadline, attempts and last error")
    func listTable() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let outcome = try await durable(["ls", "--db", fixture.path])
        #expect(outcome.status == 0, "\(outcome.error)")
        let lines = outcome.output.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("KEY") == true && lines.first?.contains("LAST ERROR") == true, "\(outcome.output)")
        let rows = lines.dropFirst().map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(rows.map { $0.first ?? "" } == DurableFixture.keys, "\(outcome.output)")
        let statuses = Dictionary(uniqueKeysWithValues: rows.map { ($0[0], $0[2]) })
        #expect(statuses["a/scheduled"] == "scheduled" && statuses["b/due"] == "due" && statuses["c/running"] == "running")
        #expect(statuses["d/retrying"] == "retrying" && statuses["e/parked"] == "parked", "\(statuses)")
        #expect(lines.first { $0.hasPrefix("e/parked") }?.contains("the card was declined") == true)
        let deadline = try #require(rows.first { $0.first == "a/scheduled" }?[3])
        #expect(ISO8601DateFormatter.withFractions.date(from: deadline) != nil, "an instant in UTC: \(outcome.output)")
        #expect(!outcome.output.contains("more:"), "one page")
    }

    @Test("ls filters by status (repeated or with commas), handler, key prefix and due range, and says on stderr when nothing matches")
    func listFilters() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        func keys(_ arguments: [String]) async throws -> [String] {
            let outcome = try await durable(["ls", "--db", fixture.path] + arguments)
            #expect(outcome.status == 0, "\(arguments): \(outcome.error)")
            return outcome.output.split(separator: "\n").dropFirst().map { String($0.prefix { $0 != " " }) }
        }
        #expect(try await keys(["--status", "parked"]) == ["e/parked"])
        #expect(try await keys(["--status", "due", "--status", "running"]) == ["b/due", "c/running"])
        #expect(try await keys(["--status", "retrying,parked"]) == ["d/retrying", "e/parked"])
        #expect(try await keys(["--handler", "later"]) == ["a/scheduled", "p/1", "p/2", "p/3", "p/4", "p/5"])
        #expect(try await keys(["--prefix", "p/", "--due-before", "+4h30m"]) == ["p/1", "p/2", "p/3"])
        #expect(try await keys(["--prefix", "p/", "--due-after", "+4h30m"]) == ["p/4", "p/5"])
        #expect(try await keys(["--due-before", "now", "--status", "due"]) == ["b/due"])
        // b/due is an hour overdue; the others due now came a second before the fixture was made.
        #expect(try await keys(["--due-before", "30m ago"]) == ["b/due"])
        #expect(try await keys(["--due-before=-30m"]) == ["b/due"])
        let none = try await durable(["ls", "--db", fixture.path, "--handler", "nobody-at-all"])
        #expect(none.status == 0 && none.output.isEmpty && none.error.contains("no timer matches (handler nobody-at-all)"), "\(none.error)")
        let otherNamespace = try await durable(["ls", "--db", fixture.path, "--namespace", "elsewhere"])
        #expect(otherNamespace.output.isEmpty && otherNamespace.error.contains("namespace 'elsewhere'"), "\(otherNamespace.error)")
    }

    @Test("ls pages with --limit: the last line gives the cursor, --after continues there, --all walks every page; each timer once")
    func listPages() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        var seen: [String] = []
        var after: [String] = []
        for _ in 0..<10 {
            let outcome = try await durable(["ls", "--db", fixture.path, "--limit", "3"] + after)
            #expect(outcome.status == 0, "\(outcome.error)")
            var lines = outcome.output.split(separator: "\n").map(String.init)
            let more = lines.last?.hasPrefix("more: --after ") == true ? lines.removeLast() : nil
            seen += lines.dropFirst().map { String($0.prefix { $0 != " " }) }
            guard let more else { break }
            after = ["--after", String(more.dropFirst("more: --after ".count))]
        }
        #expect(seen == DurableFixture.keys)
        let all = try await durable(["ls", "--db", fixture.path, "--limit", "3", "--all"])
        #expect(all.output.split(separator: "\n").dropFirst().map { String($0.prefix { $0 != " " }) } == DurableFixture.keys, "\(all.output)")
        #expect(!all.output.contains("more:"))
    }

    @Test("ls --json prints a line per page, {timers, next}: every field, dates in ISO 8601; with --all the last page's next is null")
    func listJSON() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let first = try await durable(["ls", "--db", fixture.path, "--json", "--limit", "4"])
        #expect(first.status == 0, "\(first.error)")
        let page = try #require(try jsonLines(first.output).first)
        #expect((page["timers"] as? [[String: Any]])?.count == 4)
        let cursor = try #require(page["next"] as? String)
        let second = try jsonLines(try await durable(["ls", "--db", fixture.path, "--json", "--limit", "4", "--after", cursor]).output)
        #expect((second.first?["timers"] as? [[String: Any]])?.first?["key"] as? String == "e/parked")

        let all = try jsonLines(try await durable(["ls", "--db", fixture.path, "--json", "--limit", "4", "--all"]).output)
        #expect(all.count == 3, "pages of 4, 4 and 2")
        #expect(all.last?["next"] is NSNull && all.first?["next"] is String)
        let timers = all.flatMap { ($0["timers"] as? [[String: Any]]) ?? [] }
        #expect(timers.compactMap { $0["key"] as? String } == DurableFixture.keys)
        let parked = try #require(timers.first { $0["key"] as? String == "e/parked" })
        #expect(parked["status"] as? String == "parked" && parked["handler"] as? String == "fail" && parked["attempts"] as? Int == 1)
        #expect((parked["lastError"] as? String)?.hasPrefix("the card was declined") == true)
        #expect((parked["nextDeadline"] as? String).flatMap { ISO8601DateFormatter.withFractions.date(from: $0) } != nil, "\(parked)")
        let scheduled = try #require(timers.first { $0["key"] as? String == "a/scheduled" })
        #expect(scheduled["intervalSeconds"] as? Double == 3600 && scheduled["lastError"] is NSNull && scheduled["status"] as? String == "scheduled")
        let running = try #require(timers.first { $0["key"] as? String == "c/running" })
        #expect(running["owner"] is String && running["leaseUntil"] is String, "\(running)")
    }

    @Test("ls at a terminal cuts the last error to the terminal's width")
    func listAtTerminal() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(["durable", "ls", "--db", fixture.path], environment: ["TZ": "UTC"])
        let status = await ToolRunner.waitForExit(pid)
        #expect(status == 0)
        #expect(await terminal.wait { $0.contains("p/5") })
        let lines = terminal.text.split(whereSeparator: \.isNewline)
        #expect(lines.contains { $0.hasPrefix("e/parked") && $0.hasSuffix("…") }, "\(terminal.text)")
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(terminal.text)")
    }

    // MARK: show

    @Test("show prints every field of a timer; --json the same as ls; a key not stored exits 1 with one line")
    func show() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let parked = try await durable(["show", "--db", fixture.path, "e/parked"])
        #expect(parked.status == 0, "\(parked.error)")
        for field in [
            "key:", "handler:", "status:", "next deadline:", "ready at:", "repeats:", "misfire:", "fires completed:", "attempts:", "owner:", "lease until:",
            "last error:"
        ] {
            #expect(parked.output.contains("\n\(field)") || parked.output.hasPrefix(field), "\(field) in \(parked.output)")
        }
        #expect(parked.output.contains("status:          parked") && parked.output.contains("the card was declined by the bank"), "\(parked.output)")
        #expect(parked.output.contains("last run:        parked at "), "\(parked.output)")
        let scheduled = try await durable(["show", "--db", fixture.path, "a/scheduled", "--json"])
        let object = try #require(try jsonLines(scheduled.output).first)
        #expect(object["key"] as? String == "a/scheduled" && object["intervalSeconds"] as? Double == 3600)
        #expect(try await durable(["show", "--db", fixture.path, "a/scheduled"]).output.contains("repeats:         every 1h"))

        let missing = try await durable(["show", "--db", fixture.path, "no/such"])
        #expect(missing.status == 1 && missing.output.isEmpty)
        #expect(missing.error == "timerkit durable show: no durable timer is stored under 'no/such' in namespace 'default'\n", "\(missing.error)")
    }

    // MARK: why, plan, history, stats

    @Test("why gives the answer first: parked with its error, an orphan, not due yet; a one-shot that ran is not stored (exit 1) but its last run is shown")
    func why() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let parked = try await durable(["why", "--db", fixture.path, "e/parked"])
        #expect(parked.status == 0 && parked.output.hasPrefix("parked as failed: the card was declined"), "\(parked.output)\(parked.error)")
        #expect(parked.output.contains("last run: parked at "), "\(parked.output)")
        let orphan = try await durable(["why", "--db", fixture.path, "b/due"])
        #expect(orphan.output.hasPrefix("orphan: no live instance has registered its handler 'nobody'"), "\(orphan.output)")
        let later = try await durable(["why", "--db", fixture.path, "p/1"])
        #expect(later.output.hasPrefix("not due yet: ready at "), "\(later.output)")
        let running = try await durable(["why", "--db", fixture.path, "c/running"])
        #expect(running.output.hasPrefix("claimed by instance ") && running.output.contains("its handler is running there"), "\(running.output)")
        let gone = try await durable(["why", "--db", fixture.path, "f/done"])
        #expect(gone.status == 1, "\(gone.error)")
        #expect(gone.output.hasPrefix("no timer is stored under 'f/done'") && gone.output.contains("last run: succeeded at "), "\(gone.output)")
    }

    @Test("plan lists the next occurrences and what an outage makes of them; a key not stored exits 1")
    func plan() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let outcome = try await durable(["plan", "--db", fixture.path, "a/scheduled", "--count", "3", "--outage", "3h"])
        #expect(outcome.status == 0, "\(outcome.error)")
        let lines = outcome.output.split(separator: "\n")
        #expect(lines.first?.hasPrefix("next occurrences of 'a/scheduled'") == true, "\(outcome.output)")
        #expect(lines.dropFirst().prefix { $0.hasPrefix("  ") }.count == 3, "\(outcome.output)")
        #expect(outcome.output.contains("after an outage of 3h"), "\(outcome.output)")
        let missing = try await durable(["plan", "--db", fixture.path, "no/such"])
        #expect(missing.status == 1 && missing.error.contains("no durable timer is stored under 'no/such'"), "\(missing.error)")
    }

    @Test("history shows the runs newest first, also of a one-shot that is gone; --json a line per run; no run recorded exits 1")
    func history() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let done = try await durable(["history", "--db", fixture.path, "f/done"])
        #expect(done.status == 0, "\(done.error)")
        let lines = done.output.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("STARTED") && lines[1].contains(" succeeded "), "\(done.output)")
        let parked = try jsonLines(try await durable(["history", "--db", fixture.path, "e/parked", "--json"]).output)
        #expect(parked.count == 1, "\(parked)")
        #expect(parked.first?["outcome"] as? String == "parked" && (parked.first?["error"] as? String)?.hasPrefix("the card was declined") == true)
        #expect(parked.first?["attempt"] as? Int == 1 && parked.first?["latenessSeconds"] is Double && parked.first?["instance"] is String)
        let none = try await durable(["history", "--db", fixture.path, "p/1"])
        #expect(none.status == 1 && none.error.contains("no run of 'p/1' is recorded"), "\(none.error)")
    }

    @Test("stats counts each handler's timers by status and lists the instances alive; --json the same as one object")
    func stats() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let outcome = try await durable(["stats", "--db", fixture.path])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.hasPrefix("namespace default at "), "\(outcome.output)")
        for handler in ["fail", "flaky", "hold", "later", "nobody"] {
            #expect(outcome.output.split(separator: "\n").contains { $0.hasPrefix(handler + " ") }, "\(handler) in \(outcome.output)")
        }
        #expect(outcome.output.contains("instances: 3 alive of 3 recorded"), "\(outcome.output)")

        let json = try #require(try jsonLines(try await durable(["stats", "--db", fixture.path, "--json"]).output).first)
        let handlers = try #require(json["handlers"] as? [[String: Any]])
        let later = try #require(handlers.first { $0["name"] as? String == "later" })
        #expect((later["counts"] as? [String: Int])?["scheduled"] == 6 && later["total"] as? Int == 6, "\(later)")
        #expect((json["totals"] as? [String: Int])?["parked"] == 1 && (json["totals"] as? [String: Int])?["running"] == 1, "\(json)")
        #expect((json["instances"] as? [[String: Any]])?.filter { $0["alive"] as? Bool == true }.count == 3, "\(json)")
    }

    // MARK: pause and resume

    @Test("pause and resume a timer by key, a handler's timers, and the namespace; ls --status paused finds them")
    func pauseAndResume() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        func paused() async throws -> [String] {
            let outcome = try await durable(["ls", "--db", fixture.path, "--status", "paused", "--json"])
            return try jsonLines(outcome.output).flatMap { ($0["timers"] as? [[String: Any]]) ?? [] }.compactMap { $0["key"] as? String }
        }
        let one = try await durable(["pause", "--db", fixture.path, "a/scheduled", "no/such"])
        #expect(one.status == 1 && one.output == "paused a/scheduled\n" && one.error.contains("'no/such'"), "\(one.output)\(one.error)")
        #expect(try await paused() == ["a/scheduled"])
        #expect(try await durable(["why", "--db", fixture.path, "a/scheduled"]).output.hasPrefix("paused (this timer)"))
        #expect(try await durable(["resume", "--db", fixture.path, "a/scheduled"]).output == "resumed a/scheduled\n")
        #expect(try await paused() == [])

        let handler = try await durable(["pause", "--db", fixture.path, "--handler", "later"])
        #expect(handler.status == 0 && handler.output.hasPrefix("paused handler later: 6 timers held"), "\(handler.output)\(handler.error)")
        #expect(try await paused() == ["a/scheduled", "p/1", "p/2", "p/3", "p/4", "p/5"])
        let held = try await durable(["resume", "--db", fixture.path, "p/1"])
        #expect(held.status == 1 && held.error.contains("pause holds it"), "the handler's pause holds it: \(held.error)")
        #expect(try await durable(["resume", "--db", fixture.path, "--handler", "later"]).output.hasPrefix("resumed handler later: 6 timers"))
        #expect(try await paused() == [])

        let namespace = try await durable(["pause", "--db", fixture.path, "--namespace-wide"])
        #expect(namespace.status == 0 && namespace.output.hasPrefix("paused namespace 'default': "), "\(namespace.output)\(namespace.error)")
        #expect(try await paused().count == DurableFixture.keys.count, "every timer (the running one too)")
        #expect(try await durable(["resume", "--db", fixture.path, "--namespace-wide"]).status == 0)
        #expect(try await paused() == [])
    }

    // MARK: cancel and retry

    @Test("cancel removes the timers given, says which were running; a key not stored exits 1 and the others are still removed")
    func cancelKeys() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let outcome = try await durable(["cancel", "--db", fixture.path, "a/scheduled", "no/such", "c/running"])
        #expect(outcome.status == 1, "\(outcome.error)")
        #expect(
            outcome.output.contains("cancelled a/scheduled\n") && outcome.output.contains("cancelled c/running (its handler was running"), "\(outcome.output)")
        #expect(outcome.error.contains("no durable timer is stored under 'no/such'"), "\(outcome.error)")
        let left = try await DurableTimers(path: fixture.path).timers(limit: 100).map(\.key)
        #expect(Set(left) == Set(DurableFixture.keys).subtracting(["a/scheduled", "c/running"]), "\(left)")
        let again = try await durable(["cancel", "--db", fixture.path, "b/due"])
        #expect(again.status == 0 && again.output == "cancelled b/due\n", "\(again.output)\(again.error)")
    }

    @Test("cancel with a filter needs --yes without a terminal (exit 64, nothing changed); with it, every match goes; no match exits 1")
    func cancelFilter() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let refused = try await durable(["cancel", "--db", fixture.path, "--prefix", "p/"])
        #expect(refused.status == 64, "\(refused.error)")
        #expect(try await DurableTimers(path: fixture.path).count() == DurableFixture.keys.count)

        let done = try await durable(["cancel", "--db", fixture.path, "--prefix", "p/", "--due-before", "+4h30m", "--yes"])
        #expect(done.status == 0, "\(done.error)")
        #expect(done.output == "cancelled p/1\ncancelled p/2\ncancelled p/3\n", "\(done.output)")
        #expect(done.error.contains("cancelled 3 of 3"), "\(done.error)")
        #expect(try await DurableTimers(path: fixture.path).count() == DurableFixture.keys.count - 3)

        let none = try await durable(["cancel", "--db", fixture.path, "--handler", "nobody-at-all", "-y"])
        #expect(none.status == 1 && none.error.contains("no timer matches (handler nobody-at-all)"), "\(none.error)")
    }

    @Test("At a terminal, cancel with a filter lists the matches and asks: y goes ahead, anything else changes nothing and exits 1")
    func cancelAsks() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        for (answer, status, left) in [("n\n", Int32(1), 10), ("y\n", 0, 5)] {
            let terminal = try PseudoTerminal()
            defer { terminal.close() }
            let pid = try terminal.spawn(["durable", "cancel", "--db", fixture.path, "--handler", "later", "--prefix", "p/"])
            #expect(await terminal.wait { $0.contains("[y/N]") }, "\(terminal.text)")
            #expect(terminal.text.contains("Cancel 5 timers (handler later, keys beginning with 'p/') in namespace 'default'"), "\(terminal.text)")
            #expect(terminal.text.contains("  p/1") && terminal.text.contains("  p/5"))
            terminal.type(answer)
            #expect(await ToolRunner.waitForExit(pid) == status, "\(terminal.text)")
            #expect(try await DurableTimers(path: fixture.path).count() == left)
        }
    }

    @Test("fire makes a timer's next occurrence due now, its occurrence kept; a parked, running or missing one exits 1 and names it")
    func fire() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let before = try #require(try jsonLines(try await durable(["show", "--db", fixture.path, "p/1", "--json"]).output).first)
        let outcome = try await durable(["fire", "--db", fixture.path, "p/1"])
        #expect(outcome.status == 0 && outcome.output == "fired p/1: due now\n", "\(outcome.output)\(outcome.error)")
        let after = try #require(try jsonLines(try await durable(["show", "--db", fixture.path, "p/1", "--json"]).output).first)
        #expect(after["status"] as? String == "due", "no runner of 'later' runs here: it waits, due: \(after)")
        #expect(after["nextDeadline"] as? String == before["nextDeadline"] as? String, "its occurrence is kept")
        let refused = try await durable(["fire", "--db", fixture.path, "e/parked", "c/running", "no/such"])
        #expect(refused.status == 1, "\(refused.output)\(refused.error)")
        for key in ["e/parked", "c/running", "no/such"] { #expect(refused.error.contains("'\(key)'"), "\(refused.error)") }
    }

    @Test("retry schedules a parked timer again with its attempts cleared; a running one or one not stored exits 1; a filter with --yes retries each match")
    func retry() async throws {
        let fixture = try await DurableFixture.make()
        defer { Task { await fixture.close() } }
        let outcome = try await durable(["retry", "--db", fixture.path, "e/parked"])
        #expect(outcome.status == 0 && outcome.output == "retried e/parked\n", "\(outcome.output)\(outcome.error)")
        let shown = try await durable(["show", "--db", fixture.path, "e/parked", "--json"])
        let object = try #require(try jsonLines(shown.output).first)
        #expect(object["status"] as? String != "parked" && object["attempts"] as? Int == 0, "\(object)")

        let running = try await durable(["retry", "--db", fixture.path, "c/running", "no/such"])
        #expect(running.status == 1 && running.error.contains("'c/running'") && running.error.contains("'no/such'"), "\(running.error)")

        let filtered = try await durable(["retry", "--db", fixture.path, "--status", "retrying", "--yes"])
        #expect(filtered.status == 0 && filtered.output == "retried d/retrying\n", "\(filtered.output)\(filtered.error)")
        let retried = try #require(try jsonLines(try await durable(["show", "--db", fixture.path, "d/retrying", "--json"]).output).first)
        #expect(retried["status"] as? String == "due" || retried["status"] as? String == "running", "its occurrence has passed: \(retried)")
    }

    // MARK: Schema

    @Test("Reading never migrates: a database without TimerKit's schema makes ls exit 69 and schema exit 1, unchanged; migrate brings it up, once")
    func schemaAndMigrate() async throws {
        let fixture = try DurableFixture()
        defer { try? FileManager.default.removeItem(at: fixture.folder) }
        // An empty file is an empty SQLite database.
        #expect(FileManager.default.createFile(atPath: fixture.path, contents: Data()))
        let listed = try await durable(["ls", "--db", fixture.path])
        #expect(listed.status == 69, "\(listed.error)")
        #expect(listed.error.contains("has no TimerKit tables") && listed.error.split(separator: "\n").count == 1, "\(listed.error)")
        let before = try await durable(["schema", "--db", fixture.path])
        #expect(
            before.status == 1 && before.output.contains("no TimerKit schema yet") && before.output.contains("run timerkit durable migrate"), "\(before.output)"
        )

        let migrated = try await durable(["migrate", "--db", fixture.path])
        #expect(migrated.status == 0 && migrated.output.contains("migrated from schema version 0 to \(DurableTimers.schemaVersion)"), "\(migrated.output)")
        let after = try await durable(["schema", "--db", fixture.path])
        #expect(after.status == 0 && after.output.contains("schema version \(DurableTimers.schemaVersion), this build's"), "\(after.output)")
        let again = try await durable(["migrate", "--db", fixture.path])
        #expect(again.status == 0 && again.output.contains("nothing to do"), "\(again.output)")
        #expect(try await durable(["ls", "--db", fixture.path]).status == 0)
    }

    @Test("migrate creates a SQLite file that does not exist")
    func migrateCreates() async throws {
        let fixture = try DurableFixture()
        defer { try? FileManager.default.removeItem(at: fixture.folder) }
        let outcome = try await durable(["migrate", "--db", "sqlite:\(fixture.path)"])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(try await DurableTimers(path: fixture.path).count() == 0)
    }

    // MARK: PostgreSQL

    #if canImport(TimerKitPostgres)
    /// The test server, when `TIMERKIT_POSTGRES_URL` is set (`Scripts/with-postgres` sets it). Without
    /// it these tests are left out, except on CI (`CI` set), where they fail saying so.
    static var postgresURL: String? { ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"] }
    static var runsPostgres: Bool { postgresURL != nil || ProcessInfo.processInfo.environment["CI"] != nil }

    func requireServer() throws -> String {
        try #require(
            Self.postgresURL,
            "TIMERKIT_POSTGRES_URL is not set: run the tests with a server, `Scripts/with-postgres swift test` (it starts one on loopback)")
    }

    @Test(
        "On PostgreSQL, ls, show, why, history, stats, pause, resume, cancel and retry work in a namespace of their own", .enabled(if: runsPostgres))
    func postgres() async throws {
        let url = try requireServer()
        let configuration = try #require(PostgresURL.configuration(url))
        let namespace = "cli-\(UUID().uuidString)"
        let runners = try await DurableFixture.fill(namespace: namespace) { options throws(DurableTimerError) in
            try await DurableTimers(postgres: configuration, namespace: namespace, options: options)
        }
        defer { Task { for runner in runners { await runner.shutdown(gracePeriod: .milliseconds(100)) } } }
        // A minute for each database call: a liveness bound on a loaded machine, not a speed claim.
        let store = ["--db", url, "--namespace", namespace, "--timeout", "60s"]
        let listed = try await durable(["ls", "--json", "--all"] + store)
        #expect(listed.status == 0, "\(listed.error)")
        let timers = try jsonLines(listed.output).flatMap { ($0["timers"] as? [[String: Any]]) ?? [] }
        #expect(timers.compactMap { $0["key"] as? String } == DurableFixture.keys)
        #expect(
            timers.compactMap { $0["status"] as? String } == ["scheduled", "due", "running", "retrying", "parked"] + Array(repeating: "scheduled", count: 5))
        let parked = try await durable(["ls", "--status", "parked"] + store)
        #expect(parked.output.split(separator: "\n").dropFirst().map { String($0.prefix { $0 != " " }) } == ["e/parked"], "\(parked.output)")
        #expect(try await durable(["show", "e/parked"] + store).output.contains("the card was declined"))
        #expect(try await durable(["why", "e/parked"] + store).output.hasPrefix("parked as failed: the card was declined"))
        let history = try await durable(["history", "f/done"] + store)
        #expect(history.status == 0 && history.output.contains(" succeeded "), "\(history.output)\(history.error)")
        let stats = try await durable(["stats"] + store)
        #expect(stats.status == 0 && stats.output.contains("instances: 3 alive of 3 recorded"), "\(stats.output)\(stats.error)")
        let paused = try await durable(["pause", "--handler", "later"] + store)
        #expect(paused.output.hasPrefix("paused handler later: 6 timers held"), "\(paused.output)\(paused.error)")
        let listedPaused = try await durable(["ls", "--status", "paused"] + store)
        #expect(listedPaused.output.split(separator: "\n").count == 7, "a header and 6 timers: \(listedPaused.output)")
        #expect(try await durable(["resume", "--handler", "later"] + store).output.hasPrefix("resumed handler later: 6 timers"))
        #expect(try await durable(["retry", "e/parked"] + store).status == 0)
        let cancelled = try await durable(["cancel", "--prefix", "p/", "--yes"] + store)
        #expect(cancelled.status == 0 && cancelled.output.split(separator: "\n").count == 5, "\(cancelled.output)\(cancelled.error)")
        #expect(try await durable(["show", "no/such"] + store).status == 1)
    }

    @Test("On PostgreSQL, schema reports the current version, --sql prints the migration's SQL, and migrate has nothing to do", .enabled(if: runsPostgres))
    func postgresSchema() async throws {
        let url = try requireServer()
        #expect(try await durable(["migrate", "--db", url]).status == 0)
        let schema = try await durable(["schema", "--db", url])
        #expect(schema.status == 0 && schema.output.contains("schema version \(DurableTimers.schemaVersion), this build's"), "\(schema.output)\(schema.error)")
        let sql = try await durable(["schema", "--db", url, "--sql"])
        #expect(sql.status == 0 && sql.output == DurableTimers.postgresSchemaSQL(from: DurableTimers.schemaVersion) + "\n", "\(sql.error)")
        let fromZero = try await durable(["schema", "--sql", "--from", "0"])
        #expect(fromZero.status == 0 && fromZero.output.contains("CREATE TABLE") && fromZero.output.contains("BEGIN"), "\(fromZero.error)")
        let again = try await durable(["migrate", "--db", url])
        #expect(again.status == 0 && again.output.contains("nothing to do"), "\(again.output)\(again.error)")
    }

    @Test("A PostgreSQL server that does not answer is reported in one line with exit 69 after --timeout")
    func postgresUnreachable() async throws {
        let outcome = try await durable(["ls", "--db", "postgres://nobody@127.0.0.1:1/none", "--timeout", "1s"])
        #expect(outcome.status == 69, "\(outcome.error)")
        #expect(
            outcome.error
                == "timerkit durable ls: cannot reach the database postgres://nobody@127.0.0.1:1/none within 1s (--timeout): is the server up, and the URL right?\n",
            "\(outcome.error)")
        let badURL = try await durable(["ls", "--db", "postgres://127.0.0.1/none"])
        #expect(badURL.status == 64 && badURL.error.contains("invalid PostgreSQL URL"), "\(badURL.error)")
    }
    #else
    @Test("A build without PostgreSQL refuses --db postgres:// with exit 64, saying so")
    func withoutPostgres() async throws {
        let outcome = try await durable(["ls", "--db", "postgres://app@127.0.0.1:5432/orders"])
        #expect(outcome.status == 64, "\(outcome.error)")
        #expect(outcome.error.contains("built without PostgreSQL"), "\(outcome.error)")
    }
    #endif
}

/// What `--db` and the date filters read.
@Suite("timerkit durable: reading --db and dates")
struct DurableInputTests {
    @Test("--db reads sqlite:PATH, sqlite://PATH, a bare path, postgres:// and postgresql:// URLs, shows a URL without its password, refuses other schemes")
    func locations() throws {
        #expect(try DurableLocation("sqlite:timers.sqlite") == .sqlite(path: "timers.sqlite"))
        #expect(try DurableLocation("sqlite:///var/db/timers.sqlite") == .sqlite(path: "/var/db/timers.sqlite"))
        #expect(try DurableLocation(" ./t.sqlite ") == .sqlite(path: "./t.sqlite"))
        #expect(try DurableLocation("/data/a:b.sqlite") == .sqlite(path: "/data/a:b.sqlite"))
        #expect(try DurableLocation("postgres://app@db:5433/orders") == .postgres(url: "postgres://app@db:5433/orders"))
        #expect(try DurableLocation("PostgreSQL://app@db/orders") == .postgres(url: "PostgreSQL://app@db/orders"))
        #expect(try DurableLocation("postgres://app:secret@db/orders").description == "postgres://app:***@db/orders")
        #expect(throws: UsageError.self) { try DurableLocation("mysql://app@db/orders") }
        #expect(throws: UsageError.self) { try DurableLocation("") }
        #expect(throws: UsageError.self) { try DurableLocation("sqlite:") }
    }

    @Test("--due-before and --due-after read ISO 8601 (local or with an offset), a day, today, now, +1h, 1h ago and -1h")
    func dates() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Europe/Paris")!
        let now = Date(timeIntervalSince1970: 1_795_564_800)  // 2026-11-25T00:00:00Z, 01:00 in Paris
        func date(_ text: String) throws -> Date { try DurableDateText.date(text, now: now, calendar: calendar) }
        #expect(try date("2026-11-23T20:00Z") == Date(timeIntervalSince1970: 1_795_464_000))
        #expect(try date("2026-11-23T21:00") == Date(timeIntervalSince1970: 1_795_464_000), "local: Paris is UTC+1 in November")
        #expect(try date("2026-11-24") == Date(timeIntervalSince1970: 1_795_474_800), "midnight in Paris")
        #expect(try date("today") == Date(timeIntervalSince1970: 1_795_561_200))
        #expect(try date("now") == now)
        #expect(try date("+1h") == now.addingTimeInterval(3600))
        #expect(try date("90m ago") == now.addingTimeInterval(-5400))
        #expect(try date("-90m") == now.addingTimeInterval(-5400))
        #expect(throws: UsageError.self) { try date("soonish") }
    }
}

extension ISO8601DateFormatter {
    /// `2026-11-23T19:00:00.000Z`.
    static var withFractions: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

/// The story an operator lives: a timer that did not fire, found and explained with nothing but
/// `timerkit durable`, fixed, and seen to fire. With `TIMERKIT_TRANSCRIPT=PATH` the session is
/// written there as a terminal transcript (the operating article's example).
@Suite("timerkit durable: diagnosing a stuck timer", .timeLimit(.minutes(3)))
struct DurableDiagnosisTranscriptTests {
    struct Sale: Codable, Sendable { var sale: String }

    @Test(
        "A sale-end timer whose handler no live instance registered: stats shows it due, ls lists it, why says orphan; an instance with the handler runs it, and history shows when and how late"
    )
    func stuckTimer() async throws {
        let fixture = try DurableFixture()
        defer { try? FileManager.default.removeItem(at: fixture.folder) }
        let database = "sqlite:\(fixture.path)"
        var transcript = ""
        func run(_ arguments: [String], status: Int32 = 0) async throws -> String {
            let outcome = try await ToolRunner.run(["durable"] + arguments + ["--db", database], environment: ["TZ": "UTC", "TIMERKIT_DB": ""])
            transcript += "$ timerkit durable \(arguments.joined(separator: " "))\n\(outcome.output)\(outcome.error)"
            transcript += outcome.status == 0 ? "\n" : "(exit \(outcome.status))\n\n"
            #expect(outcome.status == status, "\(arguments): \(outcome.error)")
            return outcome.output
        }
        var options = DurableTimers.Options()
        options.onError = { _ in }
        // The web app schedules the sale's end (it knows the handler) but runs no timers; the
        // timer worker that runs is an old deploy: it registered "mail" only.
        let web = try DurableTimers(path: fixture.path, options: options)
        try await web.register("sale.end", payload: Sale.self) { _, _ in }
        try await web.schedule(key: "sale/42", at: Date(timeIntervalSinceNow: -90), handler: "sale.end", payload: Sale(sale: "42"))
        let oldWorker = try DurableTimers(path: fixture.path, options: options)
        try await oldWorker.register("mail", payload: Sale.self) { _, _ in }
        await oldWorker.start()

        let stats = try await run(["stats"])
        #expect(stats.contains("sale.end") && stats.contains("1 alive"))
        let due = try await run(["ls", "--status", "due"])
        #expect(due.contains("sale/42"))
        let why = try await run(["why", "sale/42"])
        #expect(why.contains("orphan: no live instance has registered its handler 'sale.end'"))

        // The fix: deploy the worker that knows the handler.
        let fired = Locked(false)
        let worker = try DurableTimers(path: fixture.path, options: options)
        try await worker.register("sale.end", payload: Sale.self) { _, _ in fired.withLock { $0 = true } }
        await worker.start()
        // Polled for up to a minute each: a liveness bound for a loaded machine.
        for _ in 0..<2_400 where !fired.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(25)) }
        #expect(fired.withLock { $0 })
        for _ in 0..<2_400 where try await worker.timer(key: "sale/42") != nil { try await Task.sleep(for: .milliseconds(25)) }
        let after = try await run(["why", "sale/42"], status: 1)
        #expect(after.contains("no timer is stored under 'sale/42'") && after.contains("last run: succeeded"))
        let history = try await run(["history", "sale/42"])
        #expect(history.contains("succeeded"))
        await worker.shutdown()
        await oldWorker.shutdown()
        if let path = ProcessInfo.processInfo.environment["TIMERKIT_TRANSCRIPT"] {
            try transcript.write(toFile: path, atomically: true, encoding: .utf8)
        }
    }
}
