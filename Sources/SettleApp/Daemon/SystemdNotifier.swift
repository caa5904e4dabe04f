import Foundation

/// The sd_notify protocol without libsystemd: one datagram of `KEY=VALUE` lines to the
/// AF_UNIX socket named in `$NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
/// Without the variable every call does nothing. https://www.freedesktop.org/software/systemd/man/sd_notify.html
package final class SystemdNotifier: Sendable {
    private let socketPath: String?

    package init(environment: [String: String]) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    package var isEnabled: Bool { socketPath != nil }

    /// Sends one message; failures are ignored, as sd_notify's callers do (systemd may be gone).
    package func send(_ message: String) {
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        // "@" stands for the abstract namespace, whose names start with a NUL byte.
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let payload = Array(message.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                sendto(fd, payload, payload.count, Int32(MSG_NOSIGNAL), sa, length)
            }
        }
    }

    /// `RELOADING=1` must carry the CLOCK_MONOTONIC time in microseconds (systemd 253+ checks it).
    package static func monotonicMicroseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
    }
}
