#if canImport(NIOHTTP1)
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TimerKitDashboard

/// The dashboard carried by SwiftNIO's HTTP/1.1 server: each connection's requests read whole
/// (bodies up to 64 KiB), answered by ``DurableTimersDashboard/respond(to:)``, written back.
struct DashboardHTTPServer {
    let dashboard: DurableTimersDashboard

    /// The largest request body read; a larger one is answered 413.
    static let maximumBody = 65_536

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// Binds `host:port` (0 picks a free port), calls `ready` with the address bound, and serves
    /// until the task is cancelled.
    func run(host: String, port: Int, ready: @Sendable (SocketAddress) -> Void) async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    // A connection silent for a minute is closed (a client that sends a request a
                    // byte at a time holds nothing for long).
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(60)))
                    try channel.pipeline.syncOperations.addHandler(CloseWhenIdle())
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
        if let address = server.channel.localAddress { ready(address) }
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    group.addTask { await serve(connection) }
                }
            }
        }
    }

    private func serve(_ connection: Connection) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                var body = ByteBuffer()
                for try await part in inbound {
                    switch part {
                    case .head(let requestHead):
                        if let length = requestHead.headers.first(name: "Content-Length").flatMap(Int.init), length > Self.maximumBody {
                            try await write(Self.tooLarge, for: requestHead, to: outbound, closing: true)
                            return
                        }
                        head = requestHead
                        body.clear()
                    case .body(var chunk):
                        guard let requestHead = head else { continue }
                        if body.readableBytes + chunk.readableBytes > Self.maximumBody {
                            // Answered at once, and the connection closed: the rest is not read.
                            try await write(Self.tooLarge, for: requestHead, to: outbound, closing: true)
                            return
                        }
                        body.writeBuffer(&chunk)
                    case .end:
                        guard let requestHead = head else { continue }
                        let response: DashboardResponse
                        if let length = requestHead.headers.first(name: "Content-Length").flatMap(Int.init), length > Self.maximumBody {
                            response = Self.tooLarge
                        } else {
                            let request = DashboardRequest(
                                method: requestHead.method.rawValue, target: requestHead.uri, headers: requestHead.headers.map { ($0.name, $0.value) },
                                body: Data(body.readableBytesView))
                            response = await dashboard.respond(to: request)
                        }
                        try await write(response, for: requestHead, to: outbound)
                        if !requestHead.isKeepAlive { return }
                        head = nil
                    }
                }
            }
        } catch {
            // A connection that broke off: nothing to answer.
        }
    }

    static let tooLarge = DashboardResponse(status: 413, headers: [("Content-Type", "text/plain")], body: Data("Request body too large\n".utf8))

    private func write(
        _ response: DashboardResponse, for request: HTTPRequestHead, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>,
        closing: Bool = false
    ) async throws {
        var headers = HTTPHeaders(response.headers.map { ($0.name, $0.value) })
        headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
        if closing || !request.isKeepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        try await outbound.write(.head(head))
        // A HEAD's answer has the GET's length and no body.
        if !response.body.isEmpty && request.method != .HEAD { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body)))) }
        try await outbound.write(.end(nil))
    }
}
/// Closes a connection when its ``IdleStateHandler`` says it has been silent too long.
private final class CloseWhenIdle: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
#endif
