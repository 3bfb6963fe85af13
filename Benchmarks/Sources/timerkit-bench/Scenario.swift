/// A scenario, its parameters in quick and full runs, and how a child process runs it.
enum Scenario: String, CaseIterable, Sendable {
    case precision
    case churn
    case scale
    case busyOther = "busy-other"
    case busySame = "busy-same"
    case wakeups
    case reset
    case frames
    case mtchurn

    /// The scenarios a `--scenario` name selects (`busy` selects both variants).
    static func matching(_ name: String) -> [Scenario] {
        if name == "busy" { return [.busyOther, .busySame] }
        return allCases.filter { $0.rawValue == name }
    }

    /// The parameter values a run covers: pending timers, N, tolerance; one empty value otherwise.
    func parameters(quick: Bool) -> [String] {
        switch self {
        case .precision, .busyOther, .busySame: [""]
        case .churn: quick ? ["0", "10000"] : ["0", "10000", "100000"]
        case .scale: quick ? ["10000", "100000"] : ["10000", "100000", "1000000", "1000000@1ms"]
        case .wakeups: ["0", "0.1"]
        case .reset: ["100000"]
        case .frames: [""]
        case .mtchurn: quick ? ["1", "2", "4"] : ["1", "2", "4", "8", "16"]
        }
    }

    /// What a peer must be able to do.
    func requirements(parameter: String) -> Capabilities {
        switch self {
        case .precision, .busyOther, .frames: [.repeating]
        case .busySame: [.repeating, .blockable]
        case .scale: Self.scaleTolerance(parameter) > 0 ? [.oneShot, .oneShotTolerance] : [.oneShot]
        case .churn, .reset: [.oneShot]
        case .mtchurn: [.oneShot, .anyThread]
        case .wakeups: parameter == "0" ? [.manyRepeating] : [.manyRepeating, .tolerance]
        }
    }

    /// How many times each (peer, parameter) runs; the report gives the median.
    func runs(quick: Bool) -> Int {
        switch self {
        case .precision, .reset, .frames, .mtchurn: quick ? 1 : 5
        default: quick ? 1 : 3
        }
    }

    /// The hard limit for one child process, in seconds.
    func timeout(parameter: String, quick: Bool) -> Double {
        switch self {
        case .precision: Double(Self.precisionFires(quick: quick)) * 0.010 + 10
        case .churn: quick ? 15 : 30
        case .scale: parameter.hasPrefix("1000000") ? 60 : (quick ? 12 : 30)
        case .busyOther, .busySame: 10
        case .wakeups: Double(Self.wakeupWindow(quick: quick)) / 1e9 + 15
        case .reset: quick ? 20 : 40
        case .frames: Double(Self.frameDuration(quick: quick)) / 1e9 + 15
        case .mtchurn: Double(Self.mtchurnDuration(quick: quick)) / 1e9 + 20
        }
    }

    /// Scale's parameter: N, or N@Tms for timers with a tolerance of T ms.
    static func scaleCount(_ parameter: String) -> Int { Int(parameter.split(separator: "@").first ?? "") ?? 10_000 }

    /// The tolerance in nanoseconds of scale's parameter (0 without `@`).
    static func scaleTolerance(_ parameter: String) -> Int64 {
        guard let suffix = parameter.split(separator: "@").dropFirst().first, suffix.hasSuffix("ms") else { return 0 }
        return (Int64(suffix.dropLast(2)) ?? 0) * NS.millisecond
    }

    static func precisionFires(quick: Bool) -> Int { quick ? 200 : 500 }
    static func churnOperations(quick: Bool) -> Int { quick ? 50_000 : 200_000 }
    static func busyDuration(quick: Bool) -> Int64 { quick ? NS.second : 2 * NS.second }
    static func wakeupWindow(quick: Bool) -> Int64 { quick ? NS.second : 4 * NS.second }
    static func resetCount(quick: Bool) -> Int { quick ? 200_000 : 1_000_000 }
    static func frameDuration(quick: Bool) -> Int64 { quick ? 3 * NS.second : 10 * NS.second }
    static func mtchurnDuration(quick: Bool) -> Int64 { quick ? NS.second : 2 * NS.second }

    /// Runs the scenario in this (child) process.
    func run<P: Peer>(_ type: P.Type, parameter: String, quick: Bool) throws -> Figures {
        let peer = try P()
        switch self {
        case .precision:
            return try Precision.run(peer, fires: Self.precisionFires(quick: quick))
        case .churn:
            return try Churn.run(
                peer, operations: Self.churnOperations(quick: quick), pending: Int(parameter) ?? 0,
                timeLimit: (quick ? 2 : 4) * NS.second)
        case .scale:
            return try Scale.run(
                peer, n: Self.scaleCount(parameter), tolerance: Self.scaleTolerance(parameter), grace: (quick ? 3 : 10) * NS.second)
        case .busyOther, .busySame:
            return try Busy.run(peer, same: self == .busySame, duration: Self.busyDuration(quick: quick))
        case .wakeups:
            return try Wakeups.run(peer, toleranceFraction: Double(parameter) ?? 0, measure: Self.wakeupWindow(quick: quick))
        case .reset:
            return try Reset.run(
                peer, pending: Int(parameter) ?? 100_000, resets: Self.resetCount(quick: quick),
                timeLimit: (quick ? 3 : 6) * NS.second)
        case .frames:
            return try Frames.run(peer, duration: Self.frameDuration(quick: quick))
        case .mtchurn:
            return try MTChurn.run(peer, threads: Int(parameter) ?? 1, duration: Self.mtchurnDuration(quick: quick))
        }
    }
}
