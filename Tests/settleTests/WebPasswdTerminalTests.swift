import Foundation
@testable import SettleApp
import SettleTesting
import XCTest

/// `settle web-passwd NAME` at a real terminal: a pseudo-terminal from python's pty module, the
/// password typed after each prompt, everything the terminal showed kept. No mock of termios.
final class WebPasswdTerminalTests: EndToEndTestCase {
    /// Runs settle under a pty, types each of `typed` after a prompt, returns what the terminal
    /// showed (stdout and stderr both) and the exit code.
    private func atTerminal(_ arguments: [String], typing typed: [String]) throws -> (status: Int32, screen: String) {
        let driver = try world.write("pty-driver.py", #"""
            import os, pty, select, sys, time
            binary, args, typed = sys.argv[1], sys.argv[2].split("\x1f"), sys.argv[3].split("\x1f")
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(binary, [binary] + args)
            screen, deadline = b"", time.time() + 30
            def more():
                global screen
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.time()))
                if not ready: raise SystemExit("timed out; the terminal showed %r" % screen)
                try: chunk = os.read(fd, 4096)
                except OSError: chunk = b""
                screen += chunk
                return bool(chunk)
            for n, text in enumerate(typed, 1):
                while screen.count(b": ") < n:
                    if not more(): break
                os.write(fd, text.encode() + b"\n")
            while more(): pass
            _, status = os.waitpid(pid, 0)
            sys.stdout.buffer.write(screen)
            sys.exit(os.waitstatus_to_exitcode(status))
            """#)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", driver, SettleBinary.url.path, arguments.joined(separator: "\u{1f}"),
                             typed.joined(separator: "\u{1f}")]
        process.environment = SettleBinary.environment([:])
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let screen = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(problem, "", "the pty driver: \(problem)")
        return (process.terminationStatus, screen)
    }

    func testAtATerminal_asksTwiceWithoutEcho_andPrintsTheLine() throws {
        let password = "correct-horse-battery"
        let (status, screen) = try atTerminal(["web-passwd", "alice"], typing: [password, password])
        XCTAssertEqual(status, 0, screen)
        XCTAssertTrue(screen.contains("Password for alice: "), screen)
        XCTAssertTrue(screen.contains("Again, to be sure: "), screen)
        XCTAssertFalse(screen.contains(password), "the terminal echoed the password: \(screen)")
        let line = try XCTUnwrap(screen.components(separatedBy: "\r\n").first { $0.hasPrefix("alice:") }, screen)
        let users = try WebUsers.parse(line + "\n", source: "test")
        let basic = "Basic " + Data("alice:\(password)".utf8).base64EncodedString()
        XCTAssertEqual(users.check(authorization: basic), .user("alice"))
    }

    func testAtATerminal_differentEntries_exit64AndPrintNothing() throws {
        let (status, screen) = try atTerminal(["web-passwd", "alice"], typing: ["first-try", "second-try"])
        XCTAssertEqual(status, 64, screen)
        XCTAssertTrue(screen.contains("passwords differ"), screen)
        XCTAssertFalse(screen.contains("alice:pbkdf2"), screen)
        XCTAssertFalse(screen.contains("first-try") || screen.contains("second-try"), screen)
    }

    /// From a pipe nothing changes: the first line, no prompt.
    func testFromAPipe_readsOneLine_withoutAPrompt() throws {
        let result = try settle(["web-passwd", "bob"], stdin: Data("s3cret\nignored\n".utf8))
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        XCTAssertTrue(result.stdout.hasPrefix("bob:pbkdf2-sha256$"), result.stdout)
    }
}
