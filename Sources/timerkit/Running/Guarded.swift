import Foundation

/// A value behind an `NSLock`, reachable only inside ``withLock(_:)``: the tool's shared state
/// between the timer's handler, the signal thread and the main thread.
///
/// Not `Synchronization.Mutex`: ThreadSanitizer cannot see the fast path of the toolchain's `Mutex`
/// (it lives in the uninstrumented standard library), so CI's sanitizer step reported the accesses
/// it guards as races. `NSLock` is a pthread mutex, which the sanitizer intercepts.
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value. Not reentrant.
    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
