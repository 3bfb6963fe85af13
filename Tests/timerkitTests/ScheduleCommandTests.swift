import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The ways people write when: durations in words, everyday times, calendar schedules, a shell
/// command line, a command at the end of a countdown. Through the built binary.
@Suite("timerkit: durations, times and calendar schedules as people type them", .timeLimit(.minutes(2)))
struct ScheduleCommandTests {
    @Test("after 1m 30s adds the words up, as GNU sleep does; so does countdown")
    func durationsInWords() async throws {
        let after = try await ToolRunner.run(["after", "1m", "30s", "--dry-run"])
        #expect(after.status == 0, "\(after.error)")
        #expect(after.output.hasPrefix("timerkit after 1m30s: would run at "), "\(after.output)")
        let countdown = try await ToolRunner.run(["countdown", "1", "s"])
        #expect(countdown.status == 0 && countdown.output == "0:01\n0:00\n", "\(countdown.error)")
        let wrong = try await ToolRunner.run(["after", "1m", "30", "--", "true"])
        #expect(wrong.status == 64 && wrong.error.contains("without a unit"), "\(wrong.error)")
    }

    @Test("at takes 9am, tomorrow 09:00 and +5m; --dry-run shows the instant")
    func everydayTimes() async throws {
        let tomorrow = try await ToolRunner.run(["at", "tomorrow", "9am", "--dry-run"], environment: ["TZ": "UTC"])
        #expect(tomorrow.status == 0, "\(tomorrow.error)")
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let expected = utc.date(byAdding: .day, value: 1, to: Date())!
        let day = ISO8601DateFormatter.string(from: expected, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        #expect(tomorrow.output.contains("would run at \(day) 09:00:00.000 +0000"), "\(tomorrow.output)")
        let soon = try await ToolRunner.run(["at", "+5m", "--dry-run"])
        #expect(soon.status == 0 && soon.output.hasPrefix("timerkit at +5m: would run at "), "\(soon.output)")
        let bad = try await ToolRunner.run(["at", "13pm", "--", "true"])
        #expect(bad.status == 64 && bad.error.contains("invalid time '13pm'"), "\(bad.error)")
    }

    @Test("every --on runs on the calendar: --dry-run lists the next occurrences, each on one of the days at the time, local time (TZ), in order")
    func calendarDryRun() async throws {
        let outcome = try await ToolRunner.run(
            ["every", "--on", "mon..fri 09:00", "--count", "10", "--dry-run", "--", "true"], environment: ["TZ": "America/New_York"])
        #expect(outcome.status == 0, "\(outcome.error)")
        let lines = outcome.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "timerkit every Mon..Fri 09:00:00 America/New_York: the next 10 runs would start at")
        let occurrences = lines.dropFirst()
        #expect(occurrences.count == 10)
        var previous = ""
        for line in occurrences {
            let fields = line.split(separator: " ").map(String.init)  // Mon 2026-11-30 09:00:00 -0500
            #expect(fields.count == 4, "\(line)")
            #expect(["Mon", "Tue", "Wed", "Thu", "Fri"].contains(fields[0]), "\(line)")
            #expect(fields[2] == "09:00:00" && ["-0500", "-0400"].contains(fields[3]), "\(line)")
            #expect(fields[1] > previous, "in order, one per day: \(line)")
            previous = fields[1]
        }
        let daily = try await ToolRunner.run(["every", "--at", "18:30", "--dry-run", "--", "true"], environment: ["TZ": "Europe/Berlin"])
        #expect(daily.output.hasPrefix("timerkit every daily 18:30:00 Europe/Berlin: the next 5 runs would start at"), "\(daily.output)")
        #expect(daily.output.split(separator: "\n").dropFirst().prefix(5).allSatisfy { $0.contains(" 18:30:00 +0") }, "\(daily.output)")
    }

    @Test(
        "every --cron --dry-run lists --count runs from --from on the schedule's wall clock: a nightly 02:00 across New York's spring change runs at 03:00 that night"
    )
    func cronDryRun() async throws {
        let nightly = try await ToolRunner.run(
            ["every", "--cron", "0 2 * * *", "--dry-run", "--count", "3", "--from", "2027-03-13"], environment: ["TZ": "America/New_York"])
        #expect(nightly.status == 0, "\(nightly.error)")
        #expect(
            nightly.output == """
                timerkit every CRON_TZ=America/New_York 0 2 * * *: the next 3 runs would start at
                  Sat 2027-03-13 02:00:00 -0500
                  Sun 2027-03-14 03:00:00 -0400
                  Mon 2027-03-15 02:00:00 -0400

                """)
        // --count beyond ten is honoured; CRON_TZ= names the zone whatever TZ says.
        let many = try await ToolRunner.run(
            ["every", "--cron", "CRON_TZ=Australia/Lord_Howe */30 * * * *", "--dry-run", "--count", "30", "--from", "2027-04-03T12:00Z"],
            environment: ["TZ": "UTC"])
        let lines = many.output.split(separator: "\n").dropFirst()
        #expect(lines.count == 30, "\(many.output)")
        // 2027-04-04 02:00 +11:00 → 01:30 +10:30: the repeated half hour runs in both passes.
        #expect(lines.contains("  Sun 2027-04-04 01:30:00 +1100") && lines.contains("  Sun 2027-04-04 01:30:00 +1030"), "\(many.output)")
    }

    @Test(
        "C2, C14: every --cron with six fields (* * * * * *, every second) and --count 2 runs the command exactly twice, at whole-second occurrences at least 1 s apart, never before them, one after the other, and exits 0"
    )
    func cronRunsEverySecond() async throws {
        let began = Date().timeIntervalSince1970
        // With --json the command's output goes to stderr: there, each run's own reading of the clock.
        let outcome = try await ToolRunner.run(["every", "--cron", "* * * * * *", "--count", "2", "--json", "--"] + ToolRunner.printTime)
        #expect(outcome.status == 0, "\(outcome.error)")
        let runs = try CommandLineToolTests.runs(outcome.output)
        let readings = outcome.error.split(separator: "\n").compactMap { Double($0) }
        #expect(runs.map(\.run) == [1, 2], "\(outcome.output)")
        #expect(readings.count == 2, "\(outcome.error)")
        #expect(outcome.error.contains("timerkit every: 2 runs in "), "\(outcome.error)")
        try #require(runs.count == 2 && readings.count == 2)
        // The occurrences the runs stand for are whole seconds, at least one apart (the JSON's
        // instants share one offset from the clock, and are µs-rounded).
        let apart = runs[1].deadline - runs[0].deadline
        #expect(apart >= 1 - 2e-6 && abs(apart - apart.rounded()) < 2e-6, "\(outcome.output)")
        for (k, (run, reading)) in zip(runs, readings).enumerated() {
            // Never early: each run started, and its command read the clock, at or after its occurrence.
            #expect(run.latenessMilliseconds >= 0 && run.exitStatus == 0, "run \(k + 1): \(outcome.output)")
            #expect(reading >= run.deadline - 2e-6, "run \(k + 1) read \(reading), occurrence \(run.deadline)")
        }
        // On the system clock alone: the first occurrence is the first whole second after the tool
        // started; the second, the first whole second after the first run ended. However late a
        // run starts (a loaded machine), neither reading comes before its second.
        #expect(readings[0] >= began.rounded(.down) + 1, "started at \(began), read \(readings[0])")
        #expect(readings[1].rounded(.down) >= readings[0].rounded(.down) + 1, "read \(readings)")
        // One after the other (C14): the second run started after the first had ended.
        #expect(runs[1].start >= runs[0].start + runs[0].durationMilliseconds / 1000 - 2e-6, "\(outcome.output)")
    }

    @Test(
        "every's schedule is one of an interval, --at, --on and --cron; a rule it cannot read is refused with exit 64",
        arguments: [
            (["every", "--", "true"], "missing interval"),
            (["every", "1s", "--at", "09:00", "--", "true"], "give one of an interval, --at, --on and --cron"),
            (["every", "--cron", "0 25 * * *", "--", "true"], "hour field, '25': 25 is not in 0–23"),
            (["every", "--cron", "0 9 * * 1", "--on", "mon 09:00", "--", "true"], "give one of an interval, --at, --on and --cron"),
            (["every", "--cron", "CRON_TZ=Mars/Base 0 9 * * 1", "--", "true"], "unknown time zone 'Mars/Base'"),
            (["every", "--cron", "0 9 * * 1", "--from", "2027-01-01", "--", "true"], "--from is for --dry-run"),
            (["every", "--cron", "0 9 * * 1", "--from", "someday", "--dry-run"], "--from"),
            (["every", "--on", "mon..fry 09:00", "--", "true"], "unknown day 'fry'"),
            (["every", "--at", "mon 09:00", "--", "true"], "--at takes a time of day"),
            (["every", "--on", "mon 09:00", "--tolerance", "1s", "--", "true"], "are for an interval"),
            (["every", "1s", "--shell", "date", "--", "date"], "cannot both be given")
        ])
    func badSchedules(arguments: [String], problem: String) async throws {
        let outcome = try await ToolRunner.run(arguments)
        #expect(outcome.status == 64)
        #expect(outcome.error.contains(problem), "\(outcome.error)")
    }

    @Test("every --shell runs a command line through /bin/sh -c, pipes and all, on the grid")
    func shellCommandLine() async throws {
        let outcome = try await ToolRunner.run(["every", "100ms", "--count", "2", "--shell", "echo grid | tr a-z A-Z"])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output == "GRID\nGRID\n")
    }

    @Test("countdown -- CMD runs the command at zero and takes its status; never on Ctrl-C")
    func countdownThen() async throws {
        let done = try await ToolRunner.run(["countdown", "1s", "--", "sh", "-c", "echo then; exit 3"])
        #expect(done.status == 3, "\(done.error)")
        #expect(done.output == "0:01\n0:00\nthen\n")
        #expect(done.seconds >= 1)
        let interrupted = try await ToolRunner.run(["countdown", "1m", "--", "sh", "-c", "echo then"], interrupt: .afterOutput("1:00"))
        #expect(interrupted.status == 130)
        #expect(!interrupted.output.contains("then"))
        let missing = try await ToolRunner.run(["countdown", "1h", "--", "no-such-command-timerkit"])
        #expect(missing.status == 127 && missing.seconds < 30, "reported before counting down an hour")
    }
}
