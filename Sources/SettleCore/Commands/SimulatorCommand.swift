import Foundation

/// `settle simulator`: the local Apple of the tests and the demo, standalone, so integrators can
/// run their hook and backend against scripted Apple answers without an Apple account.
enum SimulatorCommand {
    static let spec = ArgumentSpec(command: "simulator", options: [
        .init(name: "--listen", takesValue: true), .init(name: "--script", takesValue: true),
        .init(name: "--write-root", takesValue: true),
    ])

    static let help = """
    Usage: settle simulator [--listen 127.0.0.1:PORT] [--script PLANS.json] [--write-root FILE]
                            [--config PATH]

    Runs a local stand-in for Apple on loopback until SIGINT or SIGTERM: verifyReceipt
    (/production/verifyReceipt, /sandbox/verifyReceipt) and the App Store Server API (Get
    Transaction Info, Get Transaction History, Look Up Order ID) under /production and
    /sandbox, answering as the plans file scripts (see the README, "Testing your integration").
    It takes the shared secret and the Server API key from the configuration, as settle will
    send them, and signs with a test chain whose root --write-root saves: point a test
    configuration's URLs and roots at it, never a production one. Listens on 127.0.0.1 only;
    port 0 picks a free one (the URL is printed first).
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let port = try listenPort(parsed.value("--listen") ?? "127.0.0.1:0")
        let configuration = try context.loadConfiguration(parsed)
        let secret: String
        var credentials: ServerAPICredentials?
        do {
            secret = try configuration.receiptAPI?.sharedSecretFile.read().value ?? ""
            if let api = configuration.serverAPI {
                credentials = ServerAPICredentials(issuerId: api.issuerId, keyId: api.keyId, bundleId: configuration.bundleId,
                                                   publicKey: try api.loadPrivateKey().publicKey)
            }
        } catch {
            throw CommandFailure.from(error)
        }
        var script = SimulatorScript()
        if let path = parsed.value("--script") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CommandFailure(.dataError, "cannot read the script \(path)")
            }
            do {
                script = try SimulatorScript(json: try JSONValue.parse(data), bundleId: configuration.bundleId)
            } catch {
                throw CommandFailure(.dataError, "script \(path): \(error)")
            }
        }
        if let path = parsed.value("--write-root") {
            guard FileManager.default.createFile(atPath: path, contents: Data(SimulatorSigningChain.rootPEM.utf8)) else {
                throw CommandFailure(.ioError, "cannot write the simulator's root certificate to \(path)")
            }
        }
        let simulator: AppleSimulator
        do {
            simulator = try AppleSimulator(sharedSecret: secret, credentials: credentials, port: port)
        } catch {
            throw CommandFailure(.unavailable, "cannot listen on 127.0.0.1:\(port): \(error)")
        }
        script.apply(to: simulator)
        let base = simulator.baseURL
        context.print("""
            settle simulator listening on \(base)
            receipt_api.production_url: \(base)/production/verifyReceipt
            receipt_api.sandbox_url: \(base)/sandbox/verifyReceipt
            server_api.production_url: \(base)/production
            server_api.sandbox_url: \(base)/sandbox
            scripted: \(script.receipts.count) receipts, \(script.transactions.count) transactions, \(script.customers.count) customers, \(script.appleOrders.count) Apple orders
            """)
        waitForSIGINTOrSIGTERM()
        simulator.stop()
        context.print("settle simulator stopped after \(simulator.requests.count + simulator.serverRequests.count) requests")
    }

    /// `127.0.0.1:PORT` or `localhost:PORT`: the simulator never listens beyond this machine.
    static func listenPort(_ text: String) throws(UsageError) -> UInt16 {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, ["127.0.0.1", "localhost"].contains(String(parts[0])), let port = UInt16(parts[1]) else {
            throw UsageError(command: "simulator", message: "--listen takes 127.0.0.1:PORT (loopback only), got '\(text)'")
        }
        return port
    }

    private static func waitForSIGINTOrSIGTERM() {
        let stop = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            // Dispatch sees the signal only once its default action (death) is off.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        sources.forEach { $0.cancel() }
    }
}
