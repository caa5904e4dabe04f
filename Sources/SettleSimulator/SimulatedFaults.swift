import Foundation
import Synchronization
import SettleBase

/// Faults switched on while `settle simulator` runs, one store at a time, so an integrator sees
/// what settle does when a store is down, throttles, hangs or is slow, without restarting the
/// simulator or editing a plans file: `POST /simulator/faults` on any of its ports with
/// `{"store": "app_store", "mode": "503"|"429"|"hang"|"slow", "seconds": N}`, `"mode": "none"`
/// to clear, `GET /simulator/faults` for what is on. Every store's fake asks `front` before
/// answering; hang and slow hold answers with the store's `SimulatedHold`, so clearing lets
/// them go at once.
///
/// Who can reach it: the fakes listen on 127.0.0.1 only, and settle itself has no such
/// endpoint (it lives in the simulator, never in a production configuration). A web page the
/// developer has open could still send a simple cross-origin POST, or rebind its own name to
/// 127.0.0.1: the switch takes only `Content-Type: application/json` (never a simple request,
/// so a browser must ask first and is never answered) with a loopback `Host`.
package final class SimulatedFaults: Sendable {
    package static let path = "/simulator/faults"

    package enum Mode: String, Sendable, CaseIterable {
        case none
        /// Every request answered 503.
        case unavailable = "503"
        /// Every request answered 429 with Retry-After `seconds` from now.
        case rateLimited = "429"
        /// Answers held until the fault is cleared (or `seconds`, 300 by default, pass).
        case hang
        /// Answers held `seconds` (2 by default), then given as usual.
        case slow
    }

    package struct Fault: Sendable, Equatable {
        package var mode: Mode
        package var seconds: Double?

        /// How long a hang or slow answer is held, or what Retry-After says.
        package var effectiveSeconds: Double {
            seconds ?? (mode == .hang ? 300 : mode == .slow ? 2 : 1)
        }
    }

    private let faults = Mutex<[String: Fault]>([:])
    /// The stores served, in the order they registered, each with the hold its answers wait on.
    private let stores = Mutex<[(name: String, hold: SimulatedHold)]>([])

    package init() {}

    /// A store's fake serves faults under `name` (its configuration key: `app_store`, ...).
    package func register(_ name: String) {
        stores.withLock { list in
            if !list.contains(where: { $0.name == name }) { list.append((name, SimulatedHold())) }
        }
    }

    package func fault(_ store: String) -> Fault { faults.withLock { $0[store] } ?? Fault(mode: .none) }

    /// Switches `store`'s fault; `.none` clears it and lets every held answer go.
    package func set(_ store: String, _ fault: Fault) {
        guard let hold = stores.withLock({ $0.first { $0.name == store }?.hold }) else { return }
        faults.withLock { $0[store] = fault.mode == .none ? nil : fault }
        switch fault.mode {
        case .hang, .slow: hold.hold()
        case .none, .unavailable, .rateLimited: hold.release()
        }
    }

    /// What `store`'s fake answers before its own handling: the switch itself, or the store's
    /// fault; nil to answer as usual (after holding it, for hang and slow). `rateLimited`
    /// makes the store's own 429 (Apple's Retry-After is a time in milliseconds); without it a
    /// plain 429 with `Retry-After` in seconds.
    package func front(_ request: HTTPServerRequest, store: String,
                       rateLimited: ((Double) -> HTTPServerResponse)? = nil) -> HTTPServerResponse? {
        if request.pathWithoutQuery == Self.path { return serve(request) }
        let fault = fault(store)
        switch fault.mode {
        case .none:
            return nil
        case .unavailable:
            return Self.message(503, "the simulated \(store) is down (POST \(Self.path) with mode none clears it)")
        case .rateLimited:
            if let rateLimited { return rateLimited(fault.effectiveSeconds) }
            var response = Self.message(429, "the simulated \(store) is rate limiting "
                                            + "(POST \(Self.path) with mode none clears it)")
            response.headers.append(HTTPHeader("Retry-After", String(Int(fault.effectiveSeconds.rounded(.up)))))
            return response
        case .hang, .slow:
            stores.withLock { $0.first { $0.name == store }?.hold }?.pass(limit: fault.effectiveSeconds)
            return nil
        }
    }

    /// Every store's fault as JSON: `{"app_store": {"mode": "503"}, "google_play": {"mode": "none"}}`.
    package var json: JSONValue {
        .object(stores.withLock { $0.map(\.name) }.map { name in
            let fault = fault(name)
            var members: [(String, JSONValue)] = [("mode", .string(fault.mode.rawValue))]
            if fault.mode != .none && fault.mode != .unavailable {
                members.append(("seconds", .number(fault.effectiveSeconds)))
            }
            return (name, .object(members))
        })
    }

    private func serve(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let host = (request.header("Host") ?? "").split(separator: ":").first.map(String.init) ?? ""
        guard ["127.0.0.1", "localhost"].contains(host.lowercased()) else {
            return Self.message(403, "\(Self.path) answers only requests to 127.0.0.1 or localhost")
        }
        switch request.method {
        case "GET":
            return .json(200, json.data)
        case "POST":
            let type = request.header("Content-Type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
            guard type?.lowercased() == "application/json" else {
                return Self.message(415, "POST \(Self.path) takes Content-Type: application/json")
            }
            switch Self.parse(request.body, stores: stores.withLock { $0.map(\.name) }) {
            case let .success((store, fault)):
                set(store, fault)
                return .json(200, json.data)
            case let .failure(problem):
                return Self.message(400, problem.description)
            }
        default:
            return Self.message(405, "GET or POST \(Self.path)")
        }
    }

    private struct Problem: Error, CustomStringConvertible { var description: String }

    private static func parse(_ body: Data, stores: [String]) -> Result<(String, Fault), Problem> {
        let storeNames = stores.joined(separator: "\"|\"")
        let modes = Mode.allCases.map(\.rawValue).joined(separator: "\"|\"")
        let usage = #"expected {"store": "\#(storeNames)", "mode": "\#(modes)", "seconds": N}"#
        guard let json = try? JSONValue.parse(body), let store = json["store"]?.looseString,
              let mode = json["mode"]?.looseString.flatMap(Mode.init(rawValue:)) else {
            return .failure(Problem(description: usage))
        }
        guard stores.contains(store) else {
            let shown = PrintableText.escape(String(store.prefix(40)))
            return .failure(Problem(description: "store \(shown) is not simulated here; \(usage)"))
        }
        var seconds: Double?
        if let value = json["seconds"] {
            guard let number = value.looseString.flatMap(Double.init), (0...3600).contains(number) else {
                return .failure(Problem(description: "seconds: a number from 0 to 3600"))
            }
            seconds = number
        }
        return .success((store, Fault(mode: mode, seconds: seconds)))
    }

    private static func message(_ status: Int, _ text: String) -> HTTPServerResponse {
        .json(status, JSONValue.object([("error", .string(text))]).data)
    }
}
