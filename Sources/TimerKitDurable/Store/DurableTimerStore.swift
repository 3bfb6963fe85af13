/// The seam between the runner (``DurableTimers``) and where timers are kept: SQLite here, a
/// PostgreSQL store beside it — what the runner needs (``DurableRunnerStore``) and what operating
/// needs (``DurableOperatingStore``). Every method is one atomic step of the store.
package protocol DurableTimerStore: DurableRunnerStore, DurableOperatingStore {}
