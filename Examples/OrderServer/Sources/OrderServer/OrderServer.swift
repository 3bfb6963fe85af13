// usage: OrderServer [--database PATH] [--port N] [--expire-after SECONDS]
//
//   POST /orders            places an order: 201 {"id", "status": "open"}; it expires unless paid
//   POST /orders/ID/pay     pays it (and cancels its expiry, in the same transaction)
//   GET  /orders/ID         {"id", "status": "open" | "paid" | "expired"}
//   /admin/timers/…         the durable timers' dashboard (TimerKitDashboard; actions log in with
//                           the token in $ORDER_SERVER_ADMIN_TOKEN, none without it)
//
// The order's row and its expiry timer are written by one transaction of the service's own SQLite
// database: both or neither, whatever happens to the process. SIGTERM or SIGINT stops the HTTP
// server and lets a running expiry finish (DurableTimersService's grace period) before it exits.
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import TimerKitDashboard
import TimerKitDurable
import TimerKitServiceLifecycle

struct Order: Codable, Sendable, ResponseEncodable {
    var id: String
    var status: String
}

@main
enum OrderServer {
    static func main() async throws {
        let arguments = CommandLine.arguments
        func option(_ name: String) -> String? { arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } }
        let path = option("--database") ?? "orders.sqlite"
        let port = option("--port").flatMap(Int.init) ?? 8080
        let expireAfter = Duration.seconds(option("--expire-after").flatMap(Int.init) ?? 1_800)
        let logger = Logger(label: "order-server")

        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(5)  // wait for other writers (`timerkit durable`, another process)
        let database = try DatabasePool(path: path, configuration: configuration)
        try await database.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, status TEXT NOT NULL)")
        }
        let timers = try DurableTimers(database: database)
        try await timers.register("order.expire", payload: Order.self) { order, _ in
            try await database.write { db in
                try db.execute(sql: "UPDATE orders SET status = 'expired' WHERE id = ? AND status = 'open'", arguments: [order.id])
            }
            logger.info("order \(order.id) expired")
        }

        let router = Router()
        router.post("orders") { _, _ -> EditedResponse<Order> in
            let order = Order(id: UUID().uuidString.lowercased(), status: "open")
            try await database.write { db in
                try db.execute(sql: "INSERT INTO orders (id, status) VALUES (?, ?)", arguments: [order.id, order.status])
                try timers.schedule(key: "order/\(order.id)/expiry", after: expireAfter, handler: "order.expire", payload: order, in: db)
            }
            return EditedResponse(status: .created, response: order)
        }
        router.post("orders/:id/pay") { _, context -> Order in
            let id = try context.parameters.require("id")
            return try await database.write { db in
                try db.execute(sql: "UPDATE orders SET status = 'paid' WHERE id = ? AND status = 'open'", arguments: [id])
                guard db.changesCount == 1 else { throw HTTPError(.conflict, message: "order \(id) is not open") }
                try timers.cancel(key: "order/\(id)/expiry", in: db)
                return Order(id: id, status: "paid")
            }
        }
        router.get("orders/:id") { _, context -> Order in
            let id = try context.parameters.require("id")
            guard let status = try await database.read({ db in try String.fetchOne(db, sql: "SELECT status FROM orders WHERE id = ?", arguments: [id]) })
            else { throw HTTPError(.notFound) }
            return Order(id: id, status: status)
        }

        // The dashboard under /admin/timers: every GET, HEAD and POST below it, handed over as is.
        let dashboard = DurableTimersDashboard(
            timers: timers,
            options: .init(
                mountPath: "/admin/timers", token: ProcessInfo.processInfo.environment["ORDER_SERVER_ADMIN_TOKEN"], readRequiresLogin: false))
        let mount = "/admin/timers"
        @Sendable func admin(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
            var request = request
            let body = try await request.collectBody(upTo: 65_536)
            let below = String(request.uri.path.dropFirst(mount.count))
            let answer = await dashboard.respond(
                to: DashboardRequest(
                    method: request.method.rawValue, target: (below.isEmpty ? "/" : below) + (request.uri.query.map { "?" + $0 } ?? ""),
                    headers: request.headers.map { ($0.name.canonicalName, $0.value) } + [("Host", request.head.authority ?? "")],
                    body: Data(body.readableBytesView)))
            var headers = HTTPFields()
            for (name, value) in answer.headers { if let name = HTTPField.Name(name) { headers.append(HTTPField(name: name, value: value)) } }
            return Response(status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
        for method in [HTTPRequest.Method.get, .head, .post] {
            router.on("admin/timers", method: method, use: admin)
            router.on("admin/timers/**", method: method, use: admin)
        }

        let server = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        let group = ServiceGroup(
            services: [server, DurableTimersService(timers, gracePeriod: .seconds(10))],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }
}
