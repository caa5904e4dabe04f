import CMalloc
import Foundation

/// How many malloc arenas the process keeps. glibc gives a thread that meets contention an
/// arena of its own, up to eight a core, and each arena keeps much of what its threads freed.
/// A pass runs some forty threads (store and delivery workers, the ledger's committer), so on
/// two cores all sixteen arenas fill and peak memory grew with the pass: 48 / 57 / 67 MiB at
/// 1 k / 10 k / 100 k due orders. Two arenas a core: 46 / 51 / 57 MiB, own CPU an order the
/// same within the noise (docs/performance.md, "Peak memory: glibc's arenas").
package enum MallocArenas {
    /// Arenas a core: glibc's default is eight.
    package static let perCore = 2

    /// Bounds the arenas to `perCore` a core, unless the operator chose a bound
    /// (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`), which glibc has
    /// applied already. Call before threads start: arenas already made stay. Returns the bound
    /// set, nil when the operator's stands.
    @discardableResult
    package static func bound(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int? {
        guard environment["MALLOC_ARENA_MAX"] == nil,
              environment["GLIBC_TUNABLES"]?.contains("glibc.malloc.arena_max") != true else { return nil }
        let arenas = perCore * max(1, ProcessInfo.processInfo.activeProcessorCount)
        return mallopt(M_ARENA_MAX, Int32(clamping: arenas)) == 1 ? arenas : nil
    }
}
