import ArgumentParser
import TimerKit

/// `--missed skip|coalesce|burst`.
enum MissedChoice: String, CaseIterable, ExpressibleByArgument {
    case skip, coalesce, burst

    var policy: MissedDeadlinePolicy {
        switch self {
        case .skip: .skip
        case .coalesce: .coalesce
        case .burst: .burst(maxFires: Int.max)
        }
    }
}

/// `--clock continuous|suspending`.
enum ClockChoice: String, CaseIterable, ExpressibleByArgument {
    case continuous, suspending

    var clock: TimerClock {
        switch self {
        case .continuous: .continuous
        case .suspending: .suspending
        }
    }
}
