import SettleConfig
import SettleLedger

/// settle's exit codes (SPEC section 7), from sysexits.h.
package enum ExitCode: Int32, Sendable {
    case success = 0
    case usage = 64
    case dataError = 65
    case unavailable = 69
    case ioError = 74
    case tempFail = 75
    case config = 78
}

/// A command that could not do its work: the message for stderr and the exit code.
package struct CommandFailure: Error, Sendable, CustomStringConvertible {
    package var code: ExitCode
    package var message: String
    package init(_ code: ExitCode, _ message: String) {
        self.code = code
        self.message = message
    }
    package var description: String { message }

    static func from(_ error: LedgerError) -> CommandFailure {
        switch error {
        case let .io(sqlite) where sqlite.isBusy:
            return CommandFailure(.tempFail, "the ledger is busy: another process held its write lock for longer than "
                                  + "\(SQLiteDatabase.busyTimeoutMilliseconds / 1000) s; try again later (\(sqlite))")
        case let .postgres(postgres) where postgres.isConnectionLost:
            return CommandFailure(.tempFail, "the ledger's PostgreSQL cannot be reached; try again later (\(postgres))")
        case .io, .newerSchema, .permissionDenied, .olderSchema, .sqliteTooOld, .postgres: return CommandFailure(.ioError, error.description)
        case .conflictingOrder, .invalid: return CommandFailure(.dataError, error.description)
        }
    }

    static func from(_ error: ConfigError) -> CommandFailure { CommandFailure(.config, error.message) }
}
