// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "TimerKit",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "TimerKit", targets: ["TimerKit"]),
        .library(name: "TimerKitTesting", targets: ["TimerKitTesting"]),
        .executable(name: "timerkit", targets: ["timerkit"]),
    ],
    dependencies: [
        // The command-line tool only; the libraries depend on the toolchain alone.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(name: "CTimerKitShims"),
        .target(
            name: "TimerKit",
            dependencies: ["CTimerKitShims"]
        ),
        .target(
            name: "TimerKitTesting",
            dependencies: ["TimerKit"]
        ),
        .executableTarget(
            name: "timerkit",
            dependencies: [
                "TimerKit",
                "TimerKitTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "TimerKitTests", dependencies: ["TimerKit", "TimerKitTesting"]),
        .testTarget(name: "TimerKitTestingTests", dependencies: ["TimerKit", "TimerKitTesting"]),
        .testTarget(name: "timerkitTests", dependencies: ["timerkit"]),
    ],
    swiftLanguageModes: [.v6]
)
