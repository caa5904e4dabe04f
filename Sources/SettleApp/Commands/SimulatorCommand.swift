import Foundation
import SettleBase
import SettleConfig
import SettleSimulator

/// `settle simulator`: the stores' stand-ins of the tests and the demo, standalone, so
/// integrators can run their hook and backend against scripted store answers without a store
/// account. Each store says what it serves, takes and prints (`StoreSimulators.all`).
enum SimulatorCommand {
    static let spec = ArgumentSpec(command: "simulator", options: [
        .init(name: "--listen", takesValue: true), .init(name: "--script", takesValue: true),
        .init(name: "--init", takesValue: true),
    ] + StoreSimulators.all.flatMap { $0.options.map { ArgumentSpec.Option(name: $0.name, takesValue: true) } })

    static var help: String {
        let options = ["[--init DIR]", "[--listen 127.0.0.1:PORT]", "[--script PLANS.json]"]
            + StoreSimulators.all.flatMap { $0.options.map { "[\($0.name) \($0.value)]" } } + ["[--config PATH]"]
        let intro = """
        Runs local stand-ins for the stores on loopback until SIGINT or SIGTERM, answering as the
        plans file scripts (docs/testing.md; /usr/share/doc/settle/docs/testing.md when installed).
        With --listen naming a port, the first store listens there and each next one on the next
        port up; without, each on a free port. POST /simulator/faults on any of its ports, with
        Content-Type: application/json and {"store": STORE, "mode": "503"|"429"|"hang"|"slow",
        "seconds": N}, switches a store's fault while it runs ("mode": "none" clears it; GET shows them).
        """
        return ([usage(options), intro, SimulatorInit.help] + StoreSimulators.all.map { $0.help })
            .joined(separator: "\n\n")
    }

    /// "Usage: settle simulator" and the options, wrapped under the first at 100 columns.
    private static func usage(_ options: [String]) -> String {
        let lead = "Usage: settle simulator"
        var lines = [lead]
        for option in options {
            if lines[lines.count - 1].count + 1 + option.count > 100 {
                lines.append(String(repeating: " ", count: lead.count))
            }
            lines[lines.count - 1] += " " + option
        }
        return lines.joined(separator: "\n")
    }

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        if let folder = parsed.value("--init") { return try SimulatorInit.run(folder: folder, parsed, context) }
        let port = try listenPort(parsed.value("--listen") ?? "127.0.0.1:0")
        // Without --config or $SETTLE_CONFIG, never /etc/settle/settle.json: a production
        // configuration's secrets are not for a simulator.
        let configured = parsed.value("--config") != nil || context.environment["SETTLE_CONFIG"] != nil
        var setup = StoreSimulatorSetup(configuration: configured ? try context.loadConfiguration(parsed) : nil,
                                        configurationPath: configured ? context.configPath(parsed) : nil, port: port)
        if let path = parsed.value("--script") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CommandFailure(.dataError, "cannot read the script \(path)")
            }
            do {
                setup.script = try SimulatorScript(json: try JSONValue.parse(data), bundleId: setup.bundleId,
                                                   parts: StoreSimulators.all.map { $0.script })
            } catch {
                throw CommandFailure(.dataError, "script \(path): \(error)")
            }
        }
        var running: [any StoreSimulator] = []
        defer { for store in running { store.stop() } }
        for store in StoreSimulators.all {
            setup.options = [:]
            for option in store.options { setup.options[option.name] = parsed.value(option.name) }
            // A fixed port: the next ones up for the next stores, where --init's settle.json expects them.
            setup.port = try port == 0 ? 0 : nextPort(port, after: running.count)
            do {
                if let started = try store.start(setup) { running.append(started) }
            } catch let error as StoreSimulatorFailure {
                switch error {
                case let .unavailable(message): throw CommandFailure(.unavailable, message)
                case let .io(message): throw CommandFailure(.ioError, message)
                }
            } catch let error as ConfigError {
                throw CommandFailure.from(error)
            }
        }
        // Caught before the banner: whoever reads it may stop the simulator at once.
        StopSignal.install()
        for (i, store) in running.enumerated() {
            context.print((i == 0 ? "settle simulator listening on \(store.baseURL)\n" : "") + store.banner)
        }
        StopSignal.wait()
        let stopped = running
        running = []
        for store in stopped { store.stop() }
        let requests = Plural.count(stopped.map { $0.requestCount }.reduce(0, +), "request")
        context.print("settle simulator stopped after \(requests)")
    }

    /// `first`'s `count`-th port up.
    static func nextPort(_ first: UInt16, after count: Int) throws(UsageError) -> UInt16 {
        guard let port = UInt16(exactly: Int(first) + count) else {
            throw UsageError(command: "simulator",
                             message: "--listen: no port \(Int(first) + count) for the store after port \(first)")
        }
        return port
    }

    /// `127.0.0.1:PORT` or `localhost:PORT`: the simulator never listens beyond this machine.
    static func listenPort(_ text: String) throws(UsageError) -> UInt16 {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, ["127.0.0.1", "localhost"].contains(String(parts[0])), let port = UInt16(parts[1]) else {
            throw UsageError(command: "simulator", message: "--listen takes 127.0.0.1:PORT (loopback only), got '\(text)'")
        }
        return port
    }
}
