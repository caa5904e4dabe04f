import XCTest
@testable import SettleBase

/// The process bounds its malloc arenas to two a core, unless the operator chose a bound.
final class MallocArenasTests: XCTestCase {
    func testTheBound_isTwoArenasACore_whenTheOperatorChoseNone() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        XCTAssertEqual(MallocArenas.bound(environment: [:]), 2 * cores)
        XCTAssertEqual(MallocArenas.bound(environment: ["GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"]), 2 * cores,
                       "another tunable leaves the arenas to settle")
    }

    func testTheOperatorsBound_stands() {
        XCTAssertNil(MallocArenas.bound(environment: ["MALLOC_ARENA_MAX": "8"]))
        XCTAssertNil(MallocArenas.bound(environment: ["GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536:glibc.malloc.arena_max=3"]))
    }
}
