/// When the runner renews the claims it holds: a tick every renewal period renews them all in one
/// write, and a claim written with another lease than its handler's (a sweep's, a manual fire's)
/// is renewed at once, to set its handler's lease.
///
/// One renewal is in flight at a time. A tick that comes while a renewal of every claim is in
/// flight has nothing to add; one that comes while lease fixes are in flight renews every claim
/// once they are back; fixes that come meanwhile wait for either.
struct Renewals: Sendable, Equatable {
    /// The renewal in flight.
    enum Flight: Sendable, Equatable {
        case none
        /// Of every held claim.
        case all
        /// Of lease fixes only; `thenAll`: a tick came meanwhile, so every claim is renewed next.
        case fixes(thenAll: Bool)
    }

    /// What to renew next.
    enum Scope: Sendable, Equatable {
        case all
        case fixes
    }

    /// Whether the tick is armed.
    private(set) var isTickArmed = false
    private(set) var flight = Flight.none
    /// Claims written with another lease than their handler's, in the order they were written.
    private(set) var fixes: [StoredKey] = []

    /// Arms the tick, unless it is armed: `true` when the caller schedules it.
    mutating func armTick() -> Bool {
        guard !isTickArmed else { return false }
        isTickArmed = true
        return true
    }

    /// The tick came: it is no longer armed.
    mutating func tickCame() {
        isTickArmed = false
    }

    /// A claim was written with another lease than its handler's: its lease is set by the next
    /// renewal.
    mutating func needsFix(_ key: StoredKey) {
        fixes.append(key)
    }

    /// The keys to renew for `scope` (every held key, or the fixes), or `nil` while a renewal is in
    /// flight: then a tick that comes during a renewal of fixes is kept for its end. Either way the
    /// fixes are taken: a renewal of every claim covers them.
    mutating func keys(for scope: Scope, held: Set<StoredKey>) -> [StoredKey]? {
        guard flight == .none else {
            if scope == .all, case .fixes = flight { flight = .fixes(thenAll: true) }
            return nil
        }
        defer { fixes = [] }
        return scope == .all ? Array(held) : fixes
    }

    /// The renewal of `scope` was sent.
    mutating func sent(_ scope: Scope) {
        flight = scope == .all ? .all : .fixes(thenAll: false)
    }

    /// The renewal in flight came back: what to renew next, if anything.
    mutating func ended() -> Scope? {
        let ended = flight
        flight = .none
        if ended == .fixes(thenAll: true) { return .all }
        return fixes.isEmpty ? nil : .fixes
    }
}
