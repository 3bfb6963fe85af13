// swift-tools-version:6.1
import PackageDescription

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `TIMERKIT_WITHOUT_POSTGRES=1` leaves out the PostgreSQL store and its tests (CI's sanitizer and
/// driver runs, which have nothing PostgreSQL-specific to find, skip building NIO four times).
let withPostgres = ProcessInfo.processInfo.environment["TIMERKIT_WITHOUT_POSTGRES"] == nil

// What each product supports (the README's "Platforms" says what is verified how):
// - TimerKit, TimerKitTesting: Linux and every Apple platform below.
// - TimerKitDurable (durable timers on SQLite): Linux and macOS, iOS, tvOS, watchOS, visionOS (GRDB's).
// - TimerKitPostgres (durable timers shared by a fleet, on PostgreSQL): Linux and macOS (servers).
// - TimerKitDurableMetrics (durable timers' metrics and logs, swift-metrics and swift-log): where
//   TimerKitDurable runs.
// - TimerKitServiceLifecycle (durable timers as a swift-service-lifecycle Service): where
//   TimerKitDurable runs.
// - TimerKitDurableTracing (spans for durable timers, swift-distributed-tracing): where
//   TimerKitDurable runs.
// - TimerKitDashboard (the web dashboard of durable timers, for any HTTP server): where
//   TimerKitDurable runs; `timerkit durable serve` carries it on SwiftNIO (Linux and macOS).
// - timerkit, the command-line tool: Linux and macOS only; it starts commands as child processes,
//   which iOS, tvOS, watchOS and visionOS do not allow (there it refuses to start one).
//
// Each product beyond TimerKit and TimerKitTesting comes with a trait, and every package it needs is
// guarded by that trait: a package that depends on this one with `traits: []` resolves and fetches
// nothing but TimerKit (SwiftPM 6.2 and later leave trait-guarded dependencies out of resolution).
// The default traits enable everything, so `swift run timerkit` and `swift test` work here as they are.
let durable: Set<String> = ["SQLite"]
let postgres: Set<String> = ["PostgreSQL"]
let metrics: Set<String> = ["Metrics"]
let lifecycle: Set<String> = ["ServiceLifecycle"]
let tracing: Set<String> = ["Tracing"]
let tool: Set<String> = ["CommandLineTool"]
let grdb = Target.Dependency.product(name: "GRDB", package: "GRDB.swift", condition: .when(traits: durable))
let postgresNIO = Target.Dependency.product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: postgres))
/// The PostgreSQL store, for the targets that use it when it is built.
let withPostgresStore: [Target.Dependency] = withPostgres ? ["TimerKitPostgres"] : []
/// SwiftNIO's HTTP server for `timerkit durable serve`, in builds with the PostgreSQL store (which brings NIO).
let withHTTPServer: [Target.Dependency] =
    withPostgres ? ["NIOCore", "NIOPosix", "NIOHTTP1"].map { .product(name: $0, package: "swift-nio", condition: .when(traits: tool)) } : []
let targets: [Target] =
    [
        .target(name: "CTimerKitShims"),
        .target(
            name: "TimerKit",
            dependencies: ["CTimerKitShims"]
        ),
        .target(
            name: "TimerKitTesting",
            dependencies: ["TimerKit"]
        ),
        .target(
            name: "TimerKitDurable",
            dependencies: ["TimerKit", grdb]
        ),
        .target(
            name: "TimerKitDurableMetrics",
            dependencies: [
                "TimerKitDurable",
                "TimerKit",
                .product(name: "Logging", package: "swift-log", condition: .when(traits: metrics)),
                .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: metrics))
            ]
        ),
        .target(
            name: "TimerKitServiceLifecycle",
            dependencies: ["TimerKitDurable", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: lifecycle))]
        ),
        .target(
            name: "TimerKitDurableTracing",
            dependencies: ["TimerKitDurable", .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: tracing))]
        ),
        // The dashboard of durable timers, independent of any HTTP server (no package of its own).
        .target(name: "TimerKitDashboard", dependencies: ["TimerKitDurable"]),
        .executableTarget(
            name: "timerkit",
            dependencies: [
                "TimerKit",
                "TimerKitTesting",
                "TimerKitDurable",
                "TimerKitDashboard",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: tool))
            ]
                // `timerkit durable --db postgres://…` (without it, the tool says it was built without
                // PostgreSQL), and `timerkit durable serve` on SwiftNIO's HTTP server, which
                // postgres-nio brings anyway.
                + withPostgresStore + withHTTPServer
        ),
        .testTarget(name: "TimerKitTests", dependencies: ["TimerKit", "TimerKitTesting"]),
        .testTarget(name: "TimerKitTestingTests", dependencies: ["TimerKit", "TimerKitTesting"]),
        .testTarget(
            name: "TimerKitServiceLifecycleTests",
            dependencies: [
                "TimerKitServiceLifecycle", "TimerKitDurable",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: lifecycle)),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: lifecycle))
            ]
        ),
        // TimerKitDurable: the `timerkit durable` tests fill their databases through it.
        .testTarget(name: "timerkitTests", dependencies: ["timerkit", "TimerKitDurable"] + withPostgresStore),
        .testTarget(
            name: "TimerKitDashboardTests",
            // GRDB and PostgresNIO write rows no release of the stores writes (the extremes of every column).
            dependencies: ["TimerKitDashboard", "TimerKitDurable", "TimerKitTesting", grdb] + withPostgresStore + (withPostgres ? [postgresNIO] : [])),
        // A demo fleet instance with seeded timers, for the dashboard's browser test (not a product).
        .executableTarget(name: "timerkit-dashboard-fleet", dependencies: ["TimerKitDurable", "TimerKit"] + withPostgresStore),
        // A process the durable crash tests start and kill (not a product).
        .executableTarget(
            name: "timerkit-durable-probe", dependencies: ["TimerKitDurable", grdb]),
        .testTarget(
            name: "TimerKitDurableTests",
            dependencies: [
                "TimerKitDurable", "TimerKit", "TimerKitTesting", "timerkit-durable-probe", "TimerKitDurableMetrics", grdb,
                .product(name: "Logging", package: "swift-log", condition: .when(traits: metrics)),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: metrics)),
                "TimerKitDurableTracing",
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: tracing)),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing", condition: .when(traits: tracing))
            ]
                + (withPostgres ? ["TimerKitPostgres", "timerkit-fleet-probe", postgresNIO] : []),
            // Databases written by 0.1.0, as SQL (Scripts/make-schema-fixtures): read by path.
            exclude: ["Fixtures"]
        ),
        // The runner's state machine against a seeded model of processes, a store and faults:
        // 100,000 random sequences, so it is compiled with optimization even in debug builds (the
        // model's own code; the machine is TimerKitDurable's).
        .testTarget(
            name: "TimerKitDurableModelTests",
            dependencies: ["TimerKitDurable", "TimerKitTesting"],
            swiftSettings: [.unsafeFlags(["-O"])]
        ),
        .testTarget(
            name: "AsyncAlgorithmsInteropTests",
            dependencies: [
                "TimerKit",
                "TimerKitTesting",
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms", condition: .when(traits: tool))
            ]
        )
    ]
    + (withPostgres
        ? [
            .target(name: "TimerKitPostgres", dependencies: ["TimerKitDurable", "TimerKit", postgresNIO]),
            // An instance of a fleet that the fleet tests and the benchmark start, kill and freeze (not a product).
            .executableTarget(
                name: "timerkit-fleet-probe",
                dependencies: [
                    "TimerKitPostgres", "TimerKitDurable", postgresNIO, .product(name: "Logging", package: "swift-log", condition: .when(traits: postgres))
                ]
            )
        ] : [])
let package = Package(
    name: "TimerKit",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "TimerKit", targets: ["TimerKit"]),
        .library(name: "TimerKitTesting", targets: ["TimerKitTesting"]),
        .library(name: "TimerKitDurable", targets: ["TimerKitDurable"]),
        .library(name: "TimerKitDurableMetrics", targets: ["TimerKitDurableMetrics"]),
        .library(name: "TimerKitServiceLifecycle", targets: ["TimerKitServiceLifecycle"]),
        .library(name: "TimerKitDurableTracing", targets: ["TimerKitDurableTracing"]),
        .library(name: "TimerKitDashboard", targets: ["TimerKitDashboard"]),
        .executable(name: "timerkit", targets: ["timerkit"])
    ] + (withPostgres ? [.library(name: "TimerKitPostgres", targets: ["TimerKitPostgres"])] : []),
    traits: [
        .trait(name: "SQLite", description: "TimerKitDurable: durable timers on SQLite (GRDB)."),
        .trait(
            name: "PostgreSQL", description: "TimerKitPostgres: durable timers shared by a fleet, on PostgreSQL (postgres-nio).",
            enabledTraits: ["SQLite"]),
        .trait(
            name: "Metrics", description: "TimerKitDurableMetrics: durable timers' metrics and logs (swift-metrics, swift-log).",
            enabledTraits: ["SQLite"]),
        .trait(
            name: "ServiceLifecycle", description: "TimerKitServiceLifecycle: durable timers as a Service (swift-service-lifecycle).",
            enabledTraits: ["SQLite"]),
        .trait(
            name: "Tracing", description: "TimerKitDurableTracing: spans for durable timers (swift-distributed-tracing).",
            enabledTraits: ["SQLite"]),
        .trait(
            name: "CommandLineTool",
            description: "The timerkit command-line tool (swift-argument-parser), and this package's own tests (swift-async-algorithms).",
            enabledTraits: ["SQLite", "PostgreSQL", "Metrics", "ServiceLifecycle", "Tracing"]),
        .default(enabledTraits: ["CommandLineTool"])
    ],
    // Every use of each package below is guarded by its product's trait (see the top).
    dependencies: [
        // TimerKitDurable only (its SQLite store): TimerKit itself depends on the toolchain alone.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // TimerKitDurableMetrics only (and postgres-nio's own): metrics and logs of durable timers.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // TimerKitServiceLifecycle only (and postgres-nio's own): durable timers as a Service.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // TimerKitDurableTracing only: spans around schedules and runs (its manifest needs Swift 6.2).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // TimerKitPostgres only: SQLite users never build NIO.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // The command-line tool's dashboard server only (postgres-nio's own dependency already).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The command-line tool only; the libraries depend on the toolchain alone.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Tests only: swift-async-algorithms' operators run on TimerKit's clocks (guarded by the
        // CommandLineTool trait, so that an app without it never fetches the package).
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4")
    ],
    targets: targets,
    swiftLanguageModes: [.v6]
)
