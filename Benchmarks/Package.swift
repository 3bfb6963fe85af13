// swift-tools-version:6.0
// TimerKit's benchmark harness: a package of its own, so that users of the library never build
// its peers' dependencies. Build and run from the repository root with
//   swift run -c release --package-path Benchmarks timerkit-bench --quick
import PackageDescription

let package = Package(
    name: "TimerKitBenchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "timerkit-bench", targets: ["timerkit-bench"]),
        .executable(name: "timerkit-durable-bench", targets: ["timerkit-durable-bench"]),
        .executable(name: "timerkit-fleet-bench", targets: ["timerkit-fleet-bench"]),
        .executable(name: "timerkit-cron-bench", targets: ["timerkit-cron-bench"]),
        .executable(name: "timerkit-query-bench", targets: ["timerkit-query-bench"])
    ],
    dependencies: [
        // Named, so that the reference below does not depend on the name of the clone's folder.
        .package(name: "TimerKit", path: "../"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2")
    ],
    targets: [
        // clock_nanosleep, mallinfo2, getrusage, prctl and /proc readings, callable from Swift.
        .target(name: "CBenchShims"),
        .executableTarget(
            name: "timerkit-bench",
            dependencies: [
                "CBenchShims",
                .product(name: "TimerKit", package: "TimerKit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "ArgumentParser", package: "swift-argument-parser")
            ]
        ),
        // Durable timers (TimerKitDurable on SQLite): the armed design beside a 1 s poll of due rows.
        .executableTarget(
            name: "timerkit-durable-bench",
            dependencies: [
                .product(name: "TimerKitDurable", package: "TimerKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser")
            ]
        ),
        // Durable timers on PostgreSQL across 1, 2 and 4 instances, armed vs a 1 s poll.
        .executableTarget(
            name: "timerkit-fleet-bench",
            dependencies: [
                .product(name: "TimerKitDurable", package: "TimerKit"),
                .product(name: "TimerKitPostgres", package: "TimerKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "TimerKit", package: "TimerKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser")
            ]
        ),
        // Operating a million durable timers: listing, counting, pausing; SQLite and PostgreSQL.
        .executableTarget(
            name: "timerkit-query-bench",
            dependencies: [
                .product(name: "TimerKitDurable", package: "TimerKit"),
                .product(name: "TimerKitPostgres", package: "TimerKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser")
            ]
        ),
        // Cron expressions: the next occurrence's cost, beside croniter (Python).
        .executableTarget(
            name: "timerkit-cron-bench",
            dependencies: [
                .product(name: "TimerKit", package: "TimerKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
