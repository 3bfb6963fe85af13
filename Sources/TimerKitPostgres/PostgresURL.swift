import Foundation
import PostgresNIO

/// Reads `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (also `postgresql://`) into a client
/// configuration without TLS: for loopback and private networks, tests and tools. Configure TLS
/// on `PostgresClient.Configuration` directly for anything else.
public enum PostgresURL {
    /// The configuration the URL names, or `nil` if it is not a PostgreSQL URL with a user and a host.
    public static func configuration(_ url: String) -> PostgresClient.Configuration? {
        guard let components = URLComponents(string: url), components.scheme == "postgres" || components.scheme == "postgresql",
            let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
        else { return nil }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password, database: database.isEmpty ? nil : database, tls: .disable
        )
    }
}
