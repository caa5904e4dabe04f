import Foundation
import SettleBase
#if canImport(Glibc)
import Glibc
#endif

/// `settle simulator --init DIR`: a test setup that works at once, written into one folder:
/// settle.json (a TEST configuration pointed at the simulator's fixed ports, its ledger in the
/// folder), plans.json (one example purchase a store), the example hook and the stores' files
/// (secrets mode 600). It never writes over a file: a planted file or symlink by any of its
/// names (or the ledger's, or the hook's output) stops it before it writes anything, and each
/// file is created with O_EXCL|O_NOFOLLOW, so one planted in the meantime is refused too; and a
/// folder another user may write in is refused, as they could swap the hook afterwards.
package struct StarterFolder {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The names settle and the hook write there later: a folder holding one is not empty of
    /// this setup (an old ledger would mix its orders into the walkthrough).
    package static let laterFiles = ["ledger.sqlite3", "ledger.sqlite3-wal", "ledger.sqlite3-shm",
                                     ExampleHook.grantsFile]

    /// The folder, absolute (the hook's path in settle.json must be).
    package var folder: String
    package var bundleId: String
    /// `127.0.0.1:PORT`, the first store's; the others listen on the next ports up.
    package var listen: String
    package var kits: [StarterKit]

    package init(folder: String, bundleId: String, listen: String, kits: [StarterKit]) {
        (self.folder, self.bundleId, self.listen, self.kits) = (folder, bundleId, listen, kits)
    }

    /// Every file written, in order: settle.json, plans.json, hook.sh, then the stores'.
    package var files: [StarterFile] {
        [StarterFile("settle.json", configuration.serialized(pretty: true) + "\n"),
         StarterFile("plans.json", plans.serialized(pretty: true) + "\n"),
         StarterFile(ExampleHook.fileName, ExampleHook.script, mode: 0o755)]
            + kits.flatMap(\.files)
    }

    /// The TEST configuration: relative paths are read next to it, the hook's is absolute.
    package var configuration: JSONValue {
        var members: [(String, JSONValue)] = [
            ("ledger", .string("ledger.sqlite3")),
            ("bundle_id", .string(bundleId)),
            ("accept_sandbox", .bool(true)),
        ]
        members += kits.flatMap(\.configuration)
        let hook = (folder as NSString).appendingPathComponent(ExampleHook.fileName)
        members += [
            ("products", .object(kits.flatMap(\.products))),
            ("delivery", .object([("command", .array([.string(hook)])),
                                  ("timeout_seconds", .number(10))])),
            ("schedule", .object([("interval_seconds", .number(10)), ("max_attempts", .number(5)),
                                  ("backoff_base_seconds", .number(5)), ("backoff_max_seconds", .number(60))])),
            ("http", .object([("connect_timeout_seconds", .number(2)), ("timeout_seconds", .number(5))])),
        ]
        return .object(members)
    }

    package var plans: JSONValue { .object(kits.flatMap(\.plans)) }

    /// Creates the folder (mode 700) if needed and writes every file, or nothing when any of
    /// its names is taken (all of them named).
    package func write() throws(Failure) {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw Failure(description: "cannot create the folder \(folder): \(error.localizedDescription)")
        }
        // Someone else who may write in the folder could swap settle.json or hook.sh afterwards,
        // and settle would run their hook as you.
        var folderInfo = stat()
        guard stat(folder, &folderInfo) == 0, folderInfo.st_uid == geteuid(), folderInfo.st_mode & 0o022 == 0 else {
            throw Failure(description: "\(folder) is not yours alone (another user owns it or may write in it); "
                              + "nothing was written (give a folder only you can write in)")
        }
        let files = files
        let taken = (files.map(\.name) + Self.laterFiles).filter { name in
            var info = stat()
            return lstat(path(name), &info) == 0
        }
        guard taken.isEmpty else {
            throw Failure(description: "\(folder) already holds \(taken.joined(separator: ", ")); nothing was written "
                              + "(give an empty or new folder, or remove them)")
        }
        var written: [String] = []
        for file in files {
            do {
                try create(file)
                written.append(file.name)
            } catch {
                for name in written { unlink(path(name)) }
                throw error
            }
        }
    }

    private func path(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }

    /// O_EXCL: never an existing file; O_NOFOLLOW: never through a symlink.
    private func create(_ file: StarterFile) throws(Failure) {
        let fd = open(path(file.name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, file.mode)
        guard fd >= 0 else {
            throw Failure(description: "cannot create \(path(file.name)): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let ok = file.contents.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }
        guard ok else {
            throw Failure(description: "cannot write \(path(file.name)): \(String(cString: strerror(errno)))")
        }
    }

    /// What to run next, as copy-paste lines: the simulator in one terminal, settle in another.
    package func nextSteps(shownFolder: String) -> String {
        func shown(_ name: String) -> String {
            Self.shellQuoted((shownFolder as NSString).appendingPathComponent(name))
        }
        let config = "--config " + shown("settle.json")
        var lines = ["Start the simulator (it serves this setup until Ctrl-C):",
                     "  settle simulator --listen \(listen) \(config) --script \(shown("plans.json"))",
                     "Then, in another terminal:"]
        let orders = kits.flatMap(\.orders)
        for order in orders {
            lines.append("  settle enqueue \(config) " + order.enqueue.map(Self.shellQuoted).joined(separator: " "))
        }
        lines.append("  settle reconcile \(config)")
        for order in orders { lines.append("  settle status \(config) \(order.id)") }
        lines.append("  cat \(shown(ExampleHook.grantsFile))     # what the example hook granted")
        return lines.joined(separator: "\n")
    }

    /// `word` as one shell word: as it is when it is plain, else in single quotes.
    package static func shellQuoted(_ word: String) -> String {
        let plain = !word.isEmpty
            && word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_./=:@,+".contains($0)) }
        return plain ? word : "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}
