import Foundation
import PostgresNIO
import TimerKit
import TimerKitDurable

extension PostgresTimerStore {
    /// One notification's payload, as the store's statements build it with `json_build_object`.
    struct Notice: Decodable {
        var n: String
        var k: String?
        var r: Int64?
        var h: String?
        var reload: Bool?
        /// The timer under `k` was removed.
        var x: Bool?
    }

    /// Listens on a pooled connection held for the purpose; after it drops, reconnects with a
    /// pause that doubles up to two seconds and reports ``DurableTimerChange/reload``, since
    /// notifications sent meanwhile are lost. Measures the clock offset again at each connection
    /// and every ten seconds.
    func changes(namespace: String) -> AsyncStream<DurableTimerChange>? {
        let (stream, continuation) = AsyncStream.makeStream(of: DurableTimerChange.self)
        let client = client
        let onError = onError
        let listener = Task { [weak self] in
            var pause = Duration.milliseconds(100)
            var connected = false
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            if connected { continuation.yield(.reload) }
                            connected = true
                            pause = .milliseconds(100)
                            let decoder = JSONDecoder()
                            for try await notification in notifications {
                                guard let notice = try? decoder.decode(Notice.self, from: Data(notification.payload.utf8)), notice.n == namespace else {
                                    continue
                                }
                                if notice.reload == true {
                                    continuation.yield(.reload)
                                } else if notice.x == true, let key = notice.k {
                                    continuation.yield(.removed(key: key))
                                } else if let key = notice.k, let readyAt = notice.r, let handler = notice.h {
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
            while !Task.isCancelled, timeSource == .database {
                try? await Task.sleep(for: .seconds(10))
                guard let self else { return }
                try? await self.measureOffset()
            }
        }
        continuation.onTermination = { _ in
            listener.cancel()
            measurer.cancel()
        }
        keep([listener, measurer])
        return stream
    }
}
