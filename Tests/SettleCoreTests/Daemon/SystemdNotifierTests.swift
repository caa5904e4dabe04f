import Foundation
import XCTest
@testable import SettleApp

final class SystemdNotifierTests: XCTestCase {
    /// Binds a datagram socket at `address` (a path, or "@name" for the abstract namespace).
    func listen(_ address: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var sa = sockaddr_un()
        sa.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &sa.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let rc = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        XCTAssertEqual(rc, 0, String(cString: strerror(errno)))
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    func receive(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
    }

    func testSendsToAnAbstractSocket() throws {
        let name = "@settle-test-\(getpid())-\(UInt32.random(in: 0..<UInt32.max))"
        let fd = try listen(name)
        defer { close(fd) }
        SystemdNotifier(environment: ["NOTIFY_SOCKET": name]).send("READY=1\nSTATUS=ok")
        XCTAssertEqual(receive(fd), "READY=1\nSTATUS=ok")
    }

    func testSendsToAPathSocket() throws {
        let path = NSTemporaryDirectory() + "settle-notify-\(getpid())-\(UInt32.random(in: 0..<UInt32.max)).sock"
        let fd = try listen(path)
        defer { close(fd); unlink(path) }
        SystemdNotifier(environment: ["NOTIFY_SOCKET": path]).send("WATCHDOG=1")
        XCTAssertEqual(receive(fd), "WATCHDOG=1")
    }

    func testWithoutNotifySocket_doesNothing() {
        let notifier = SystemdNotifier(environment: [:])
        XCTAssertFalse(notifier.isEnabled)
        notifier.send("READY=1")
    }
}
