extension DurableTimers {
    /// What a runner does when it opens a database whose schema is older than this build's.
    ///
    /// Both stores record the version of their tables in a table of their own,
    /// `timerkit_schema`, and bring an older database up to ``DurableTimers/schemaVersion`` with
    /// ordered migrations, each applied once. A database newer than this build is never touched:
    /// opening it throws ``DurableTimerError/schema(reason:)``.
    public enum SchemaUpgrade: Sendable, Hashable {
        /// Applies the missing migrations on opening, in one transaction, behind a lock that makes
        /// it safe from every process or instance at once. The default: the role or user that opens
        /// the database must be allowed to change its schema.
        case automatic
        /// Never changes the schema: opening throws ``DurableTimerError/schema(reason:)``, naming
        /// the versions, unless the database is at this build's version. For an application role
        /// without DDL privileges, with the migrations applied at deploy time by a role that has
        /// them (`DurableTimers.migrate(postgres:)`, or the SQL of
        /// `DurableTimers.postgresSchemaSQL(from:)` run by a DBA).
        case verifyOnly
    }
}

extension DurableTimers {
    /// The version of the stores' schema this build reads and writes (recorded in the database's
    /// `timerkit_schema` table). 1 was 0.1.0's, which recorded none.
    public static let schemaVersion = SchemaVersions.current
}
