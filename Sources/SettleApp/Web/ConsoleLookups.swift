import SettleBase
import SettleConfig
import Synchronization

/// The console's store lookups (an Apple order id, a Google `GPA.` id): one client per store for
/// the whole process, so one pacer and one OAuth token serve every lookup, and each lookup is a
/// person's explicit POST (never a GET another site can fire with an image), at most `perMinute`
/// a minute for each operator and client. Built on first use: a console nobody asks never loads
/// the store keys.
final class ConsoleLookups: Sendable {
    let perMinute: Int
    private let configuration: Configuration
    private let time: any TimeSource
    private let built = Mutex<Result<StatusReport.StoreLookups, ConfigError>?>(nil)
    private let recent = Mutex<[String: [Int64]]>([:])

    init(configuration: Configuration, time: any TimeSource, perMinute: Int = 10) {
        self.configuration = configuration
        self.time = time
        self.perMinute = perMinute
    }

    /// The process's lookups (the same clients every time).
    func lookups() throws(ConfigError) -> StatusReport.StoreLookups {
        let result = built.withLock { cached in
            if let cached { return cached }
            let made: Result<StatusReport.StoreLookups, ConfigError>
            do throws(ConfigError) {
                made = .success(try StatusReport.StoreLookups.configured(configuration, time: time))
            } catch {
                made = .failure(error)
            }
            cached = made
            return made
        }
        return try result.get()
    }

    /// Seconds until `who` may look up again; nil when it may now (and the lookup is counted).
    func admit(_ who: String) -> Int64? {
        let now = time.unixSeconds
        return recent.withLock { table in
            if table.count >= 10_000 { table = table.filter { $0.value.last ?? 0 > now - 60 } }
            let times = (table[who] ?? []).filter { $0 > now - 60 }
            guard times.count < perMinute else {
                table[who] = times
                return max(1, (times.first ?? now) + 60 - now)
            }
            table[who] = times + [now]
            return nil
        }
    }
}
