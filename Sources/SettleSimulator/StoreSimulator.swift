import SettleConfig

/// A store's stand-in as `settle simulator` runs it: started from the configuration (or the
/// simulator's defaults), scripted by its part of the plans file, listening on loopback until
/// the command stops it. The command runs every store's in turn and names none of them
/// (SettleApp's `StoreSimulators.all`).
package protocol StoreSimulator: AnyObject {
    /// The store's part of a plans file.
    static var script: any StoreScript.Type { get }
    /// Its options on the command line, each taking a value: `("--write-root", "FILE")`.
    static var options: [(name: String, value: String)] { get }
    /// Its paragraphs of `settle simulator --help`: what it serves and what it accepts.
    static var help: String { get }
    /// Starts it, scripted with its part of `setup.script`; nil when the setup gives it nothing
    /// to stand in for. Throws `StoreSimulatorFailure`, or the configuration's `ConfigError`.
    static func start(_ setup: StoreSimulatorSetup) throws -> Self?
    /// Its part of `settle simulator --init`'s folder: a test configuration, files and one
    /// example purchase that `start` then serves; nil for a store the folder leaves out.
    static func starterKit(_ request: StarterRequest) throws -> StarterKit?
    /// Where it listens: "http://127.0.0.1:<port>".
    var baseURL: String { get }
    /// What `settle simulator` prints once it listens: what to configure, what it was scripted
    /// with, what it accepts.
    var banner: String { get }
    /// The requests it answered, for the line `settle simulator` ends with.
    var requestCount: Int { get }
    func stop()
}

extension StoreSimulator {
    /// Left out of `settle simulator --init`'s folder unless the store says what it adds.
    package static func starterKit(_ request: StarterRequest) throws -> StarterKit? { nil }
}

/// What a store's stand-in starts from.
package struct StoreSimulatorSetup {
    /// The app a simulator stands in for when no configuration names one: the documented
    /// example configuration's bundle id.
    package static let defaultBundleId = "com.example.game"

    /// The configuration `--config` or `$SETTLE_CONFIG` names, nil for the defaults (a
    /// production configuration's secrets are not for a simulator).
    package var configuration: Configuration?
    /// Where that configuration was read from.
    package var configurationPath: String?
    /// The plans file (an empty one without `--script`).
    package var script: SimulatorScript
    /// The port `--listen` names for the first store to start (0: any free one); the others
    /// take a free port of their own.
    package var port: UInt16
    /// The store's options as given, by name.
    package var options: [String: String]
    /// The faults `POST /simulator/faults` switches, shared by every store's fake.
    package var faults = SimulatedFaults()

    /// An empty plans file and no options.
    package init(configuration: Configuration?, configurationPath: String?, port: UInt16) {
        self.configuration = configuration
        self.configurationPath = configurationPath
        script = SimulatorScript(bundleId: configuration?.bundleId ?? Self.defaultBundleId)
        self.port = port
        options = [:]
    }

    /// The configuration's bundle id, or the default.
    package var bundleId: String { script.bundleId }
}

/// Why a store's stand-in did not start, in the kinds `settle simulator` exits with.
package enum StoreSimulatorFailure: Error, CustomStringConvertible {
    /// It cannot listen, or cannot make what it serves with.
    case unavailable(String)
    /// It cannot write a file it hands out.
    case io(String)

    package var description: String {
        switch self {
        case let .unavailable(message), let .io(message): message
        }
    }
}
