// swift-tools-version:6.1
import PackageDescription

// A small order service on Hummingbird: an order expires unless it is paid within a delay. The
// order row and its expiry timer are written by one transaction of the service's own SQLite
// database, and the runner is a service of the same ServiceGroup as the HTTP server, so SIGTERM
// drains both; the durable timers' dashboard is mounted at /admin/timers. CI builds it, runs it and
// talks to it (Scripts/run-server-example).
let package = Package(
    name: "OrderServer",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Only the traits it uses: GRDB and swift-service-lifecycle, not PostgreSQL or the tool.
        .package(name: "TimerKit", path: "../..", traits: ["SQLite", "ServiceLifecycle"]),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0")
    ],
    targets: [
        .executableTarget(
            name: "OrderServer",
            dependencies: [
                .product(name: "TimerKitDurable", package: "TimerKit"),
                .product(name: "TimerKitServiceLifecycle", package: "TimerKit"),
                .product(name: "TimerKitDashboard", package: "TimerKit"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
