import Logging
import PostgresNIO
import TimerKit
import TimerKitDurable

extension PostgresTimerStore {
    /// Which share of the connection pool a call may use.
    ///
    /// A claim is only as good as its renewals: when the application's writes (a batch of
    /// schedules, a slow query of its own) take every connection, a renewal that queues behind
    /// them lets the lease expire and the occurrence run twice. So ``reservedConnections`` of the
    /// pool (a quarter, at least one) are kept for what keeps held claims alive.
    enum Lane: Sendable {
        /// The application's calls and the runner's loads and claims: at most the pool's size less
        /// the reserved connections at once.
        case general
        /// Renewals, the ends of runs (completions, retries, parks) and releases: any connection,
        /// the reserved ones included.
        case reserved
    }

    /// Runs `body` on a connection of the pool within the timeout, mapping its failures; waits
    /// for the store's opening first (unless it is part of it: `opening`).
    ///
    /// A call that outlives the timeout is cancelled and left behind, never waited for, and the
    /// connection it holds is closed: postgres-nio does not cancel a query that is under way, so a
    /// connection whose server went silent (a partition, a half-open socket) would otherwise stay
    /// leased until the operating system gives up on it, minutes later — and a pool of such
    /// connections serves nobody.
    func call<T: Sendable>(
        _ lane: Lane = .general, opening: Bool = false, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws(DurableTimerError) -> T {
        let (client, logger, timeout, permits, opened) = (client, logger, timeout, lane == .general ? generalPermits : nil, opened)
        let openingFailure = openingFailure
        let result: Result<T, DurableTimerError> = await withCheckedContinuation { continuation in
            let waiting = Locked<CheckedContinuation<Result<T, DurableTimerError>, Never>?>(continuation)
            let work = Locked<(task: Task<Void, Never>?, connection: PostgresConnection?)>((nil, nil))
            let deadline = try? TimerClock.continuous.schedule(at: .after(timeout)) {
                guard let continuation = waiting.withLock({ $0.take() }) else { return }
                let (task, connection) = work.withLock { $0 }
                task?.cancel()
                if let connection { Task { try? await connection.close() } }
                let reason =
                    if !opened.isOpen, let failure = openingFailure.withLock({ $0 }) {
                        "the database has not answered since the store was made (\(failure))"
                    } else {
                        "no answer within \(timeout)"
                    }
                continuation.resume(returning: .failure(.unreachable(reason: reason)))
            }
            let task = Task {
                let result: Result<T, DurableTimerError>
                do {
                    if !opening, !(await opened.wait()) { throw CancellationError() }
                    if let permits, !(await permits.acquire()) { throw CancellationError() }
                    defer { permits?.release() }
                    result = .success(
                        try await client.withConnection { connection in
                            work.withLock { $0.connection = connection }
                            defer { work.withLock { $0.connection = nil } }
                            return try await body(connection, logger)
                        })
                } catch {
                    result = .failure(Self.mapped(error))
                }
                deadline?.cancel()
                waiting.withLock { $0.take() }?.resume(returning: result)
            }
            work.withLock { $0.task = task }
        }
        return try result.get()
    }

    /// A failure of the database or the connection as a ``DurableTimerError``.
    static func mapped(_ error: any Error) -> DurableTimerError {
        if let error = error as? DurableTimerError { return error }
        if let error = error as? PostgresTransactionError {
            return mapped(error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? CancellationError())
        }
        if let error = error as? PSQLError {
            let state = error.serverInfo?[.sqlState]
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            switch error.code {
            case .server:
                // Class 08: connection exceptions; 57P0x: the server is shutting down or starting.
                if let state, state.hasPrefix("08") || state.hasPrefix("57P") { return .unreachable(reason: "\(message) (\(state))") }
                return .store(reason: "\(message) (\(state ?? "?"))")
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
                return .unreachable(reason: "\(error.code)\(error.underlying.map { ": \($0)" } ?? "")")
            default:
                return .store(reason: String(reflecting: error))
            }
        }
        if error is CancellationError { return .unreachable(reason: "cancelled") }
        return .unreachable(reason: "\(error)")
    }
}
