import Testing

@testable import TimerKit

/// The tests' one leak check (C8, C11, C12): `@Test(.checksLeaks)` makes every object the test
/// watches with ``watchForLeaks(_:sourceLocation:)`` a requirement — released by the end of the
/// test, or the test fails at the line that watched it. A release that happens on another thread
/// (a queue's delivery, a driver ending) is waited for, with the real-time tests' generous
/// timeout; on a virtual clock it has happened already. The test can also ask in the middle
/// (``WatchedObject/isReleased``), to say *when* something is released.
///
/// LeakSanitizer (a CI step) finds memory nobody points to; this finds objects something still
/// points to that should have let go — a timer holding its owner, a handler kept after
/// `invalidate()`.
struct LeakCheck: TestTrait, TestScoping {
    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let watch = LeakWatch()
        try await LeakWatch.$current.withValue(watch) { try await function() }
        for object in watch.objects where !(await eventually { object.isReleased }) {
            Issue.record("leaked: \(object.name) was still alive when the test ended", sourceLocation: object.sourceLocation)
        }
    }
}

extension Trait where Self == LeakCheck {
    /// Fails the test if an object it watched (``watchForLeaks(_:sourceLocation:)``) is still alive
    /// when it ends.
    static var checksLeaks: Self { LeakCheck() }
}

/// An object a test watches: held weakly.
struct WatchedObject: Sendable {
    private let box: WeakBox
    let name: String
    let sourceLocation: SourceLocation

    fileprivate init(_ object: AnyObject?, sourceLocation: SourceLocation) {
        box = WeakBox(object)
        name = object.map { String(describing: type(of: $0)) } ?? "nil"
        self.sourceLocation = sourceLocation
    }

    /// Whether the object has been released.
    var isReleased: Bool { box.isReleased }
}

/// Watches `object` for the rest of the test: it must be released by the test's end (the test
/// needs the ``LeakCheck`` trait, `.checksLeaks`).
@discardableResult
func watchForLeaks(_ object: AnyObject?, sourceLocation: SourceLocation = #_sourceLocation) -> WatchedObject {
    guard let object else {
        Issue.record("watchForLeaks was given nil", sourceLocation: sourceLocation)
        return WatchedObject(nil, sourceLocation: sourceLocation)
    }
    let watched = WatchedObject(object, sourceLocation: sourceLocation)
    if let watch = LeakWatch.current {
        watch.add(watched)
    } else {
        Issue.record("watchForLeaks outside a test with the .checksLeaks trait", sourceLocation: sourceLocation)
    }
    return watched
}

/// The objects one test watches.
private final class LeakWatch: Sendable {
    @TaskLocal static var current: LeakWatch?
    private let watched = Locked<[WatchedObject]>([])

    func add(_ object: WatchedObject) { watched.withLock { $0.append(object) } }
    var objects: [WatchedObject] { watched.withLock { $0 } }
}

/// A weak reference, readable from any thread.
private final class WeakBox: @unchecked Sendable {
    private let lock = Locked(())
    private weak var object: AnyObject?

    init(_ object: AnyObject?) { self.object = object }

    var isReleased: Bool { lock.withLock { _ in object == nil } }
}
