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
    /// pool (a quarter, at least one, of a pool of two or more; none of a pool of one, which the
    /// lanes share) are kept for what keeps held claims alive.
    enum Lane: Sendable {
        /// The application's calls and the runner's loads and claims: at most the pool's size less
        /// the reserved connections at once.
        case general
        /// Renewals, the ends of runs (completions, retries, parks) and releases: any connection,
        /// the reserved ones included.
        case reserved
    }

    /// Runs `body` on a connection of the pool within the timeout, mapping its failures; waits
    /// for the store's opening first (unless it is part of it: `opening`). The reserved lane's
    /// calls run on ``reservedExecutor``, never on the cooperative pool that handlers share.
    ///
    /// A call that outlives the timeout is cancelled and left behind, never waited for, and the
    /// connection it holds is closed: postgres-nio does not cancel a query that is under way, so a
    /// connection whose server went silent (a partition, a half-open socket) would otherwise stay
    /// leased until the operating system gives up on it, minutes later — and a pool of such
    /// connections serves nobody.
    func call<T: Sendable>(
        _ lane: Lane = .general, opening: Bool = false, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws(DurableTimerError) -> T {
        // Inside the application's transaction (DurableTimers.inTransaction(on:_:)): on its
        // connection, within its own timeouts; it commits or rolls back.
        if let connection = DurableTransactionScope.connection(for: self) as? PostgresConnection {
            if !opening, !(await opened.wait()) { throw .shutDown }
            do {
                return try await body(connection, logger)
            } catch {
                throw Self.mapped(error)
            }
        }
        let (client, logger, timeout, permits, opened) = (client, logger, timeout, lane == .general ? generalPermits : nil, opened)
        // The reserved lane's calls on the store's own executor; the others on the global one.
        let executor: (any TaskExecutor)? = lane == .reserved ? reservedExecutor : nil
        let openingFailure = openingFailure
        let result: Result<T, DurableTimerError> = await withCheckedContinuation { continuation in
            let waiting = Locked<CheckedContinuation<Result<T, DurableTimerError>, Never>?>(continuation)
            let work = Locked(CallState())
            let deadline = try? TimerClock.continuous.schedule(at: .after(timeout)) {
                guard let continuation = waiting.withLock({ $0.take() }) else { return }
                let (task, connection) = work.withLock { work in
                    work.timedOut = true
                    return (work.task, work.connection)
                }
                task?.cancel()
                // The body still holds the connection: closed now, on its event loop (a body that
                // ends meanwhile closes it itself before the pool gets it back, below).
                if let connection { Self.closeNow(connection) }
                let reason = Self.timeoutReason(
                    timeout, connected: connection != nil, opening: opening || opened.isOpen ? nil : openingFailure.withLock({ $0 }))
                continuation.resume(returning: .failure(.unreachable(reason: reason)))
            }
            let task = Task(executorPreference: executor) {
                let result: Result<T, DurableTimerError>
                do {
                    if !opening, !(await opened.wait()) { throw CancellationError() }
                    if let permits, !(await permits.acquire()) { throw CancellationError() }
                    defer { permits?.release() }
                    result = .success(
                        try await client.withConnection { connection in
                            work.withLock { $0.connection = connection }
                            do {
                                let value = try await body(connection, logger)
                                try await Self.release(connection, work)
                                return value
                            } catch {
                                try? await Self.release(connection, work)
                                throw error
                            }
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

    /// What a call that ran out of time says happened: still waiting for the store's opening (and
    /// why its last try failed), connected but unanswered (a slow server, or a statement waiting
    /// for a lock), or never connected — never "unreachable" for a server that answers slowly.
    static func timeoutReason(_ timeout: Duration, connected: Bool, opening failure: DurableTimerError?) -> String {
        if let failure {
            let last =
                if case .unreachable(let reason) = failure { reason } else { failure.description }
            return "the store is still opening: its schema check and clock reading have not succeeded within \(timeout) (its last try: \(last))"
        }
        if connected {
            return "connected, but no answer within \(timeout): the server is slow or overloaded, or the statement waits for a lock another session holds"
        }
        return "no connection within \(timeout): the server does not accept connections in time, or every connection of the pool is busy"
    }

    /// A call under way: its task, the connection its body holds, and whether its time ran out.
    struct CallState {
        var task: Task<Void, Never>?
        var connection: PostgresConnection?
        var timedOut = false
    }

    /// Starts closing `connection` on its event loop, without waiting.
    private static func closeNow(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in }
    }

    /// Lets the call's connection go back to the pool — closed first if the call timed out
    /// meanwhile, so that no other call is handed a connection whose last answer never came.
    private static func release(_ connection: PostgresConnection, _ work: Locked<CallState>) async throws {
        let timedOut = work.withLock { work in
            work.connection = nil
            return work.timedOut
        }
        if timedOut { try? await connection.close() }
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
