import Foundation
import PostgresNIO
import TimerKit
import TimerKitDurable

extension PostgresTimerStore {
    /// Listens on a connection of its own, outside the pool (``listenerClient``); after it drops, reconnects with a
    /// pause that doubles up to two seconds and reports ``DurableTimerChange/reload``, since
    /// notifications sent meanwhile are lost. Measures the clock offset again at each connection
    /// and every ten seconds.
    ///
    /// A connection can also go silent without dropping (half-open: a NAT or a firewall forgot it,
    /// the server's host vanished): every ``listenerCheck`` the store notifies itself with a token
    /// and expects it back on the listening connection within another ``listenerCheck``; when it
    /// does not come, the store reports it, closes that connection, and so reconnects and reloads.
    func changes(namespace: String) -> AsyncStream<DurableTimerChange>? {
        let (stream, continuation) = AsyncStream.makeStream(of: DurableTimerChange.self)
        listenerState.withLock { $0.started = true }
        let client = listenerClient
        let onError = onError
        let opened = opened
        let channel = Self.channel(for: namespace)
        let watch = Locked<(connection: PostgresConnection?, awaiting: String?)>((nil, nil))
        let listener = Task { [weak self] in
            var pause = Duration.milliseconds(100)
            var connected = false
            // A store made while the database was away: its opening reports the outage.
            guard await opened.wait() else { return continuation.finish() }
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        defer { watch.withLock { $0 = (nil, nil) } }
                        try await connection.listen(on: channel) { notifications in
                            watch.withLock { $0 = (connection, nil) }
                            // The first connection: the runner's first load waits for it, unless
                            // it gave up waiting; a reconnection: notifications were missed.
                            if connected || self?.listenerState.withLock({ $0.gaveUp }) == true { continuation.yield(.reload) }
                            connected = true
                            self?.listening.open()
                            pause = .milliseconds(100)
                            let decoder = JSONDecoder()
                            for try await notification in notifications {
                                guard let notice = try? decoder.decode(Notice.self, from: Data(notification.payload.utf8)), notice.namespace == namespace else {
                                    continue
                                }
                                if let token = notice.probe {
                                    watch.withLock { state in if state.awaiting == token { state.awaiting = nil } }
                                    continue
                                }
                                if let from = notice.windowFrom, let through = notice.windowThrough {
                                    continuation.yield(.window(from: from, through: through))
                                } else if notice.reload == true {
                                    continuation.yield(.reload)
                                } else if notice.removed == true, let key = notice.key {
                                    continuation.yield(.removed(key: key))
                                } else if let key = notice.key, let readyAt = notice.readyAt, let handler = notice.handler {
                                    continuation.yield(.ready(key: key, readyAt: readyAt, handler: handler))
                                }
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                    onError(Self.mapped(error))
                }
                if Task.isCancelled { break }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
                try? await self?.measureOffset()
            }
            continuation.finish()
        }
        let timeSource = timeSource
        let measurer = Task { [weak self] in
            guard await opened.wait() else { return }
            while !Task.isCancelled, timeSource == .database {
                try? await Task.sleep(for: .seconds(10))
                guard let self else { return }
                try? await self.measureOffset()
            }
        }
        let check = listenerCheck
        let checker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: check)
                guard let self, let connection = watch.withLock({ $0.connection }) else { continue }
                let token = UUID().uuidString
                watch.withLock { $0.awaiting = token }
                do {
                    _ = try await self.call { connection, logger in
                        try await connection.query(Self.notifyStatement(namespace: namespace, .probe, value: token), logger: logger)
                    }
                } catch {
                    continue  // the database is away: the calls report it, and this says nothing of the listener
                }
                try? await Task.sleep(for: check)
                let silent = watch.withLock { $0.awaiting == token && $0.connection === connection }
                guard silent, !Task.isCancelled else { continue }
                onError(
                    .store(
                        reason:
                            "the connection listening for other instances' changes delivered nothing within \(check) of a test notification "
                            + "(half-open, or a pooler in transaction mode): reconnecting, and loading the horizon again"))
                try? await connection.close()
            }
        }
        continuation.onTermination = { _ in
            listener.cancel()
            measurer.cancel()
            checker.cancel()
        }
        keep([listener, measurer, checker])
        return stream
    }
}
