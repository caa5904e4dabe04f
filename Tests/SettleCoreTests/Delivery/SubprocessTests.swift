import Foundation
import Glibc
import XCTest
@testable import SettleApp
@testable import SettleDelivery

/// Runs real processes: small /bin/sh scripts written to a fresh temporary folder.
final class SubprocessTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        var template = Array("\(NSTemporaryDirectory())/settle-subprocess-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        folder = try XCTUnwrap(created.map { String(cString: $0) })
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    // MARK: Exit status and output

    func testRun_whenHookExitsZero_capturesStdoutAndStderrInterleaved_andEchoesStdin() throws {
        let hook = try script("echo out\necho err >&2\ncat\n")
        let payload = #"{"order_id":"o-1001","idempotency_key":"2000000123456789"}"#

        let result = try run(hook, standardInput: Data(payload.utf8))

        XCTAssertEqual(result.termination, .exited(0))
        XCTAssertEqual(result.output, "out\nerr\n" + payload)
        XCTAssertFalse(result.outputTruncated)
        XCTAssertGreaterThan(result.pid, 0)
    }

    func testRun_whenHookExitsTempfailOrDataerr_reportsTheExitCode() throws {
        XCTAssertEqual(try run(script("exit 75\n")).termination, .exited(75))
        XCTAssertEqual(try run(script("exit 65\n")).termination, .exited(65))
    }

    func testRun_whenHookKillsItselfWithSIGTERM_reportsSignaled() throws {
        let result = try run(script("kill -TERM $$\nsleep 5\n"))

        XCTAssertEqual(result.termination, .signaled(SIGTERM))
    }

    func testRun_whenOutputExceedsTheLimit_keepsTheFirstBytes_andDrainsTheRest() throws {
        let hook = try script("head -c 102400 /dev/zero | tr '\\000' x\necho done >&2\n")

        let result = try run(hook)

        XCTAssertEqual(result.termination, .exited(0))
        XCTAssertTrue(result.outputTruncated)
        XCTAssertEqual(result.output, String(repeating: "x", count: 4096))
    }

    func testRun_whenHookIsSilent_outputIsEmpty() throws {
        let result = try run(script("exit 0\n"))

        XCTAssertEqual(result.output, "")
        XCTAssertFalse(result.outputTruncated)
    }

    /// The waiting thread sleeps while the spawn runs up to the exec, then once more until the
    /// hook has exited: not also at its output's end of file, which comes a moment before its exit.
    func testRun_whenHookIsSilent_theCallerSleepsOnlyForTheSpawnAndForTheExit() throws {
        let hook = try script("sleep 0.2\nexit 3\n")
        for _ in 0..<3 {
            let before = Self.voluntaryContextSwitchesOfThisThread()
            let result = try run(hook)
            let slept = Self.voluntaryContextSwitchesOfThisThread() - before

            XCTAssertEqual(result.termination, .exited(3))
            XCTAssertEqual(result.output, "")
            XCTAssertLessThanOrEqual(slept, 2, "the caller slept \(slept) times for one silent hook")
        }
    }

    func testOutputCollector_whenLimitCutsACharacter_dropsTheHalf() {
        var collector = Subprocess.OutputCollector(limit: 5)
        Array("abcdé!".utf8).withUnsafeBytes { collector.append($0) }

        XCTAssertEqual(collector.textAndTruncation.text, "abcd")
        XCTAssertTrue(collector.textAndTruncation.truncated)
    }

    func testOutputCollector_repairsInvalidUTF8_withinTheLimit() {
        var roomy = Subprocess.OutputCollector(limit: 10)
        [UInt8]([0x66, 0xFF, 0x67]).withUnsafeBytes { roomy.append($0) }
        XCTAssertEqual(roomy.textAndTruncation.text, "f\u{FFFD}g")
        XCTAssertFalse(roomy.textAndTruncation.truncated)

        // Each bad byte becomes 3 bytes of U+FFFD, which must not push past the limit.
        var tight = Subprocess.OutputCollector(limit: 4)
        [UInt8]([0x66, 0xFF, 0xFF, 0x67]).withUnsafeBytes { tight.append($0) }
        XCTAssertEqual(tight.textAndTruncation.text, "f\u{FFFD}")
        XCTAssertTrue(tight.textAndTruncation.truncated)
    }

    // MARK: Environment and inherited state

    func testRun_passesExactlyTheGivenEnvironment() throws {
        setenv("SETTLE_TEST_PARENT_ONLY", "leaked", 1)
        defer { unsetenv("SETTLE_TEST_PARENT_ONLY") }
        let hook = try script("""
            echo "order=${SETTLE_ORDER_ID-unset}"
            echo "parent=${SETTLE_TEST_PARENT_ONLY-unset}"
            echo "home=${HOME-unset}"

            """)

        let result = try run(hook, environment: ["SETTLE_ORDER_ID": "o-1001 with spaces"])

        XCTAssertEqual(result.output, "order=o-1001 with spaces\nparent=unset\nhome=unset\n")
    }

    func testRun_hookInheritsNoDescriptorBeyondStandardStreams() throws {
        // Opened without O_CLOEXEC, the way a careless library would, then moved high so
        // it cannot hide among the numbers ls itself uses.
        let careless = open("/dev/null", O_RDONLY)
        XCTAssertGreaterThanOrEqual(careless, 0)
        let high = fcntl(careless, F_DUPFD, 100)
        defer { close(careless); close(high) }
        let hook = try script("exec ls /proc/self/fd\n")

        let result = try run(hook)

        let listed = Set(result.output.split(separator: "\n").map(String.init))
        // 3 is the directory ls opens to list itself.
        XCTAssertTrue(listed.isSubset(of: ["0", "1", "2", "3"]), "inherited: \(listed.sorted())")
        XCTAssertTrue(listed.isSuperset(of: ["0", "1", "2"]), "listed: \(listed.sorted())")
    }

    func testRun_whenParentIgnoresSIGPIPE_hookStillGetsTheDefault() throws {
        _ = signal(SIGPIPE, SIG_IGN)
        // With SIGPIPE ignored, `yes` would complain "Broken pipe" on stderr instead of dying quietly.
        let hook = try script("yes | head -n 1\necho finished\n")

        let result = try run(hook)

        XCTAssertEqual(result.output, "y\nfinished\n")
    }

    func testRun_whenCallerBlocksAndIgnoresSignals_hookStartsWithNoneBlockedOrIgnored() throws {
        _ = signal(SIGPIPE, SIG_IGN)
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGUSR1)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        // exec keeps the mask and ignored signals, so grep reports what the hook was given.
        let hook = try script("exec grep -E '^Sig(Blk|Ign):' /proc/self/status\n")

        let result = try run(hook)

        let masks = Dictionary(uniqueKeysWithValues: result.output.split(separator: "\n").map { line in
            let parts = line.split(separator: ":")
            return (String(parts[0]), UInt64(parts[1].trimmingCharacters(in: .whitespaces), radix: 16) ?? .max)
        })
        XCTAssertEqual(masks["SigBlk"], 0, result.output)
        // Bits 31 and 32 are signals 32 and 33, which glibc reserves for itself and which
        // its posix_spawn always leaves ignored in the child; no program can use them.
        XCTAssertEqual(masks["SigIgn"].map { $0 & ~UInt64(0x1_8000_0000) }, 0, result.output)
    }

    // MARK: Timeouts and stray children

    func testRun_whenHookOverrunsTheTimeout_killsItsWholeProcessGroup() throws {
        let pidFile = "\(folder)/grandchild.pid"
        let hook = try script("sleep 300 &\necho $! > \"$1\"\nsleep 300\n")

        let result = try run(hook, arguments: [pidFile], timeout: 0.5)

        XCTAssertEqual(result.termination, .timedOut)
        XCTAssertGreaterThanOrEqual(result.duration, 0.5)
        XCTAssertLessThan(result.duration, 3)
        let grandchild = try XCTUnwrap(Int32(String(contentsOfFile: pidFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertTrue(waitUntilGone(grandchild, within: 2), "grandchild \(grandchild) survived the timeout")
    }

    func testRun_whenGrandchildKeepsOutputOpen_returnsShortlyAfterTheHookExits() throws {
        let pidFile = "\(folder)/grandchild.pid"
        let hook = try script("sleep 30 &\necho $! > \"$1\"\necho delivered\nexit 0\n")
        defer {
            // A normal exit kills nothing, so the test cleans up its own stray.
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
               let grandchild = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(grandchild, SIGKILL)
            }
        }
        let clock = ContinuousClock()
        let started = clock.now

        let result = try run(hook, arguments: [pidFile])

        XCTAssertLessThan(clock.now - started, .milliseconds(1500))
        XCTAssertEqual(result.termination, .exited(0))
        XCTAssertEqual(result.output, "delivered\n")
        let grandchild = try XCTUnwrap(Int32(String(contentsOfFile: pidFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertEqual(kill(grandchild, 0), 0, "a normal exit must not kill what the hook left running")
    }

    func testRun_whenHookFloodsOutputForever_stillTimesOutOnTime() throws {
        let result = try run(script("exec yes\n"), timeout: 0.5)

        XCTAssertEqual(result.termination, .timedOut)
        XCTAssertTrue(result.outputTruncated)
        XCTAssertLessThan(result.duration, 3)
    }

    func testRun_whenHookNeitherReadsStdinNorExits_stillTimesOutOnTime() throws {
        let input = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)

        let result = try run(script("exec sleep 300\n"), standardInput: input, timeout: 0.5)

        XCTAssertEqual(result.termination, .timedOut)
        XCTAssertLessThan(result.duration, 3)
    }

    // MARK: Standard input

    func testRun_whenHookIgnoresAMebibyteOfStdin_doesNotHang() throws {
        let input = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)

        let quick = try run(script("exit 0\n"), standardInput: input)
        XCTAssertEqual(quick.termination, .exited(0))

        // Exits only after our writes have long filled the pipe buffer.
        let slow = try run(script("sleep 0.3\nexit 0\n"), standardInput: input)
        XCTAssertEqual(slow.termination, .exited(0))
        XCTAssertLessThan(slow.duration, 5)
    }

    func testRun_whenHookReadsAMebibyteOfStdin_receivesAllOfIt() throws {
        let input = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)

        let result = try run(script("wc -c\n"), standardInput: input)

        XCTAssertEqual(result.termination, .exited(0))
        XCTAssertEqual(result.output.trimmingCharacters(in: .whitespacesAndNewlines), "1048576")
    }

    // MARK: Failing to start

    func testRun_whenProgramDoesNotExist_throwsNamingThePath() {
        XCTAssertThrowsError(try run("/no/such/hook")) { error in
            XCTAssertEqual((error as? SubprocessError)?.message,
                           "cannot run /no/such/hook: No such file or directory")
        }
    }

    func testRun_whenProgramIsNotExecutable_throwsPermissionDenied() throws {
        let path = try script("exit 0\n")
        chmod(path, 0o644)

        XCTAssertThrowsError(try run(path)) { error in
            XCTAssertEqual((error as? SubprocessError)?.message, "cannot run \(path): Permission denied")
        }
    }

    func testRun_whenEnvironmentNameIsInvalid_throwsWithoutRevealingValues() throws {
        let path = try script("exit 0\n")

        XCTAssertThrowsError(try run(path, environment: ["BAD=NAME": "secret-value"])) { error in
            let message = (error as? SubprocessError)?.message ?? ""
            XCTAssertTrue(message.contains("BAD=NAME"), message)
            XCTAssertFalse(message.contains("secret-value"), message)
        }
    }

    /// A NUL would cut an argument or a variable short in the C strings exec takes: nothing runs,
    /// and the message names what was wrong without a value.
    func testRun_whenAnArgumentOrVariableHoldsANulByte_orANameIsInvalid_runsNothing_andSaysWhich() throws {
        let marker = "\(folder)/ran"
        let path = try script("touch \(marker)\n")
        func message(arguments: [String] = [], _ environment: [String: String]) -> String {
            do {
                _ = try run(path, arguments: arguments, environment: environment)
                return "ran"
            } catch {
                return (error as? SubprocessError)?.message ?? "\(error)"
            }
        }
        XCTAssertEqual(message(arguments: ["a\u{0}b"], [:]), "cannot run \(path): an argument contains a NUL byte")
        XCTAssertEqual(message(["TOKEN": "secret\u{0}value"]), "cannot run \(path): environment variable TOKEN contains a NUL byte")
        XCTAssertEqual(message(["BAD=NAME": "secret-value"]), "cannot run \(path): invalid environment variable name \"BAD=NAME\"")
        XCTAssertEqual(message(["": "secret-value"]), "cannot run \(path): invalid environment variable name \"\"")
        XCTAssertEqual(message(["BAD\u{0}NAME": "secret-value"]), "cannot run \(path): invalid environment variable name \"BAD\u{0}NAME\"")
        XCTAssertEqual(message(["A": "=\u{0}"]), "cannot run \(path): environment variable A contains a NUL byte")
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "nothing ran")
        XCTAssertEqual(try run(path, arguments: ["a=b"], environment: ["A": "b=c", "Z": ""]).termination, .exited(0))
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "an \"=\" in an argument or a value is no fault")
    }

    // MARK: Start notification and concurrency

    func testRun_onStartReceivesThePidOfTheNewProcessGroupLeader() throws {
        let seen = Recorder<(pid: Int32, group: Int32)>()

        let result = try Subprocess.run(arguments: [try script("sleep 0.2\n")], environment: [:],
                                        standardInput: Data(), timeout: 10,
                                        onStart: { pid in seen.append((pid, getpgid(pid))) })

        let started = try XCTUnwrap(seen.values.first)
        XCTAssertEqual(started.pid, result.pid)
        XCTAssertEqual(started.group, result.pid, "the hook must lead its own process group")
    }

    func testRun_fromManyThreadsAtOnce_keepsEachRunsOutputApart() throws {
        let hook = try script("cat\necho \" $1\"\n")
        let results = Recorder<(index: Int, output: String)>()

        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let output = (try? Subprocess.run(arguments: [hook, "arg\(index)"], environment: [:],
                                              standardInput: Data("input\(index)".utf8), timeout: 10).output)
            results.append((index, output ?? "failed to start"))
        }

        XCTAssertEqual(results.values.count, 8)
        for (index, output) in results.values {
            XCTAssertEqual(output, "input\(index) arg\(index)\n")
        }
    }

    func testRun_manyTimes_leavesNoDescriptorOrChildBehind() throws {
        let echo = try script("cat\n")
        let fail = try script("exit 75\n")
        _ = try run(echo, standardInput: Data("warm-up".utf8))
        // Other tests' servers may still be closing sockets on their threads, so check that no
        // descriptor appeared rather than that the count is unchanged.
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))

        for round in 0..<20 {
            _ = try run(echo, standardInput: Data("round \(round)".utf8))
            _ = try run(fail)
            XCTAssertThrowsError(try run("\(folder)/missing"))
        }
        _ = try run(script("exec sleep 300\n"), timeout: 0.1)

        let after = Set(try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))
        XCTAssertEqual(after.subtracting(before), [], "descriptors leaked")
        var status: Int32 = 0
        XCTAssertEqual(waitpid(-1, &status, WNOHANG), -1, "an unreaped child is left")
        XCTAssertEqual(errno, ECHILD)
    }

    // MARK: Helpers

    private static func voluntaryContextSwitchesOfThisThread() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD, which Glibc does not export
        return usage.ru_nvcsw
    }

    private func script(_ body: String) throws -> String {
        let path = "\(folder)/hook-\(UUID().uuidString)"
        try Data(("#!/bin/sh\n" + body).utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(chmod(path, 0o755), 0)
        return path
    }

    private func run(_ program: String, arguments: [String] = [], environment: [String: String] = [:],
                     standardInput: Data = Data(), timeout: Double = 10) throws -> SubprocessResult {
        // PATH is always given: the scripts call sleep, cat, ls, which the shell looks up.
        try Subprocess.run(arguments: [program] + arguments,
                           environment: environment.merging(["PATH": "/usr/bin:/bin"]) { mine, _ in mine },
                           standardInput: standardInput, timeout: timeout)
    }

    /// Gone means no such process, or a zombie waiting for init to reap it (which some
    /// container inits never do): either way it no longer runs.
    private func waitUntilGone(_ pid: Int32, within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if kill(pid, 0) != 0 && errno == ESRCH { return true }
            if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
               let afterName = stat.range(of: ") ", options: .backwards),
               stat[afterName.upperBound...].hasPrefix("Z") {
                return true
            }
            usleep(20_000)
        }
        return false
    }
}

/// Collects values from other threads for later assertions.
private final class Recorder<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Value] = []

    func append(_ value: Value) {
        lock.withLock { stored.append(value) }
    }

    var values: [Value] {
        lock.withLock { stored }
    }
}
