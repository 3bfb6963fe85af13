/// A mutable value handed to a closure that runs synchronously on another thread (the scenario
/// waits for it), which Swift cannot prove safe.
final class Box<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
