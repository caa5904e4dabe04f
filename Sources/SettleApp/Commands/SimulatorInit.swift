import Foundation
import SettleSimulator

/// `settle simulator --init DIR`: writes a TEST setup that works at once (`StarterFolder`,
/// each store adding its part) and prints the commands that run it, so a backend developer's
/// first day starts from a working order instead of a configuration reference.
enum SimulatorInit {
    /// Where the folder's setup expects the simulator: fixed, so its settle.json can name it.
    static let defaultListen = "127.0.0.1:8700"

    static let help = """
        --init DIR writes a working TEST setup into DIR (created, mode 700; it never writes over a
        file, naming any it finds, nor into a folder others may write in): settle.json (its ledger
        in DIR, the simulator's URLs on \(defaultListen) and the next ports up, or --listen's),
        plans.json with a purchase for each store it sets up, the secrets they need
        (mode 600), the simulator's test root sim-root.pem, and an example hook, hook.sh, that
        appends what it grants to grants.jsonl. It prints the commands that serve, enqueue,
        reconcile and show those orders.
        """

    static func run(folder: String, _ parsed: ParsedArguments, _ context: CommandContext) throws {
        let others = ["--script", "--config"] + StoreSimulators.all.flatMap { $0.options.map(\.name) }
        if let other = others.first(where: { parsed.value($0) != nil }) {
            throw UsageError(command: "simulator", message: "--init writes its own setup: \(other) is for serving one")
        }
        guard !folder.isEmpty else { throw UsageError(command: "simulator", message: "--init needs a folder") }
        let listen = parsed.value("--listen") ?? defaultListen
        let port = try SimulatorCommand.listenPort(listen)
        guard port != 0 else {
            throw UsageError(command: "simulator",
                             message: "--init needs a fixed port (--listen 127.0.0.1:PORT, not 0): settle.json "
                                 + "names it")
        }
        let bundleId = StoreSimulatorSetup.defaultBundleId
        let now = context.time.now
        var kits: [StarterKit] = []
        for store in StoreSimulators.all {
            let next = try SimulatorCommand.nextPort(port, after: kits.count)
            let request = StarterRequest(port: next, bundleId: bundleId, shownFolder: folder, now: now)
            if let kit = try store.starterKit(request) { kits.append(kit) }
        }
        let absolute = folder.hasPrefix("/") ? folder
            : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(folder)
        let starter = StarterFolder(folder: (absolute as NSString).standardizingPath, bundleId: bundleId,
                                    listen: "127.0.0.1:\(port)", kits: kits)
        do {
            try starter.write()
        } catch {
            throw CommandFailure(.ioError, "--init: \(error)")
        }
        let secrets = starter.files.filter { $0.mode & 0o077 == 0 }.map(\.name)
        context.print("""
            Wrote a TEST setup into \(folder): \(starter.files.map(\.name).joined(separator: ", "))
            (secrets, mode 600: \(secrets.joined(separator: ", ")); never point a production configuration at it).

            \(starter.nextSteps(shownFolder: folder))
            """)
    }
}
