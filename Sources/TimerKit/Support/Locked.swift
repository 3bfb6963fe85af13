#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`: the state is reachable only inside ``withLock(_:)``.
///
/// Not `Synchronization.Mutex`: ThreadSanitizer cannot see the fast path of the toolchain's
/// `Mutex`, which lives in the uninstrumented standard library, and reports every access it guards
/// as a race. A pthread mutex is intercepted by the sanitizer and costs the same uncontended.
package final class Locked<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Behind a pointer rather than in a `var`: the mutex already makes access exclusive, and a
    /// stored property would add the runtime's dynamic exclusivity check to every `withLock`.
    private let state: UnsafeMutablePointer<State>

    /// - Parameter padded: Give the mutex and the state cache lines of their own (128 bytes each at
    ///   least), so that locks taken on different cores at once never share a line — the engine's
    ///   shards.
    package init(_ state: State, padded: Bool = false) {
        if padded {
            mutex = UnsafeMutableRawPointer.allocate(byteCount: max(128, MemoryLayout<pthread_mutex_t>.size), alignment: 128)
                .bindMemory(to: pthread_mutex_t.self, capacity: 1)
            self.state = UnsafeMutableRawPointer.allocate(byteCount: max(128, (MemoryLayout<State>.stride + 127) & ~127), alignment: 128)
                .bindMemory(to: State.self, capacity: 1)
        } else {
            mutex = .allocate(capacity: 1)
            self.state = .allocate(capacity: 1)
        }
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        defer { pthread_mutexattr_destroy(&attributes) }
        #if canImport(Glibc)
        // Spin briefly before sleeping in the kernel: the engine's critical sections are tens of
        // nanoseconds, far shorter than a futex sleep and wake-up.
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        #endif
        let status = pthread_mutex_init(mutex, &attributes)
        precondition(status == 0, "Locked: pthread_mutex_init failed (\(status))")
        self.state.initialize(to: state)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state. Not reentrant.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }
}
