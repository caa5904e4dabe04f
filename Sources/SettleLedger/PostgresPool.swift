import Foundation
import SettleConfig

/// A few PostgreSQL connections shared by a process's workers: each borrowed by one thread at
/// a time, opened on first need, and dropped when it failed in a way that leaves it unusable
/// (the server went away, the network was cut), so the next borrower reconnects.
package final class PostgresPool: @unchecked Sendable {
    private let url: String
    private let password: Secret?
    private let capacity: Int
    /// Every session read-only (`default_transaction_read_only`): a write through this pool fails
    /// in the database, whatever code path asks for it.
    private let readOnly: Bool
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var open = 0

    package init(url: String, password: Secret?, capacity: Int, readOnly: Bool = false) {
        self.url = url
        self.password = password
        self.capacity = max(1, capacity)
        self.readOnly = readOnly
    }

    /// Runs `body` with a connection of its own; waits while every connection is in use.
    package func with<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try borrow()
        do {
            let result = try body(connection)
            giveBack(connection, healthy: connection.isHealthy)
            return result
        } catch let error as PostgresError {
            giveBack(connection, healthy: !error.isConnectionLost && connection.isHealthy)
            throw error
        } catch {
            giveBack(connection, healthy: connection.isHealthy)
            throw error
        }
    }

    private func borrow() throws -> PostgresConnection {
        condition.lock()
        while idle.isEmpty && open >= capacity { condition.wait() }
        if let connection = idle.popLast() {
            condition.unlock()
            return connection
        }
        open += 1
        condition.unlock()
        do {
            let connection = try PostgresConnection(url: url, password: password)
            // A host cut off between a transaction's statements would keep its row locks, and
            // so its orders, from everyone else for as long as it is gone: the server ends such a
            // transaction after 30 s (https://www.postgresql.org/docs/current/runtime-config-client.html).
            // client_min_messages: NOTICEs ("already exists, skipping") are not settle's to print.
            try connection.execute("SET idle_in_transaction_session_timeout = '30s'; SET client_min_messages = warning")
            // https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-DEFAULT-TRANSACTION-READ-ONLY
            if readOnly { try connection.execute("SET default_transaction_read_only = on") }
            return connection
        } catch {
            condition.lock()
            open -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func giveBack(_ connection: PostgresConnection, healthy: Bool) {
        condition.lock()
        if healthy {
            idle.append(connection)
        } else {
            connection.close()
            open -= 1
            // What cut this one off (the server restarted, the network went) most likely cut the
            // idle ones too, and libpq only finds out on their next use: each would fail one more
            // request (a notification answered 503) after the database is back. Dropped now.
            for stale in idle { stale.close() }
            open -= idle.count
            idle.removeAll()
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Closes the idle connections; borrowed ones close when given back unhealthy or at deinit.
    package func close() {
        condition.lock()
        for connection in idle { connection.close() }
        open -= idle.count
        idle.removeAll()
        condition.unlock()
    }
}
