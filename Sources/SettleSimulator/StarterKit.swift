import Foundation
import SettleBase

/// What `settle simulator --init` asks each store for: where its stand-in will listen and the
/// names the folder's files are shown by in the commands it prints.
package struct StarterRequest: Sendable {
    /// The port the store's stand-in will listen on (`--listen`'s port for the first store,
    /// the next ones up for the others).
    package var port: UInt16
    /// The app the setup stands in for.
    package var bundleId: String
    /// The folder as the operator named it, for the commands printed (`sim`, `./sim`).
    package var shownFolder: String
    /// Now, for purchase times that look recent to settle.
    package var now: Date

    package init(port: UInt16, bundleId: String, shownFolder: String, now: Date) {
        (self.port, self.bundleId, self.shownFolder, self.now) = (port, bundleId, shownFolder, now)
    }

    /// A file of the folder as the printed commands name it.
    package func shown(_ name: String) -> String { (shownFolder as NSString).appendingPathComponent(name) }
}

/// One file `settle simulator --init` writes: never over an existing one, secrets 0600.
package struct StarterFile: Sendable {
    package var name: String
    package var contents: Data
    package var mode: mode_t

    package init(_ name: String, _ text: String, mode: mode_t = 0o644) {
        (self.name, self.contents, self.mode) = (name, Data(text.utf8), mode)
    }

    package init(_ name: String, data: Data, mode: mode_t = 0o644) {
        (self.name, self.contents, self.mode) = (name, data, mode)
    }

    /// Private to its owner: settle refuses a secret file others may read.
    package static func secret(_ name: String, _ text: String) -> StarterFile { StarterFile(name, text, mode: 0o600) }
}

/// What one store puts into `settle simulator --init`'s folder, so that the folder is a test
/// setup that works at once: its sections of settle.json, its products, its part of
/// plans.json (one example purchase), the files those name, and the `settle enqueue` line that
/// hands its example purchase to settle.
package struct StarterKit: Sendable {
    /// Top-level members of settle.json (`receipt_api`, `google_play`, ...).
    package var configuration: [(String, JSONValue)] = []
    /// Members of settle.json's `products`.
    package var products: [(String, JSONValue)] = []
    /// Top-level members of plans.json.
    package var plans: [(String, JSONValue)] = []
    package var files: [StarterFile] = []
    /// The example order's id and the `settle enqueue` arguments that enqueue it (after
    /// `enqueue`, without `--config`), file names as `StarterRequest.shown` gives them.
    package var orders: [(id: String, enqueue: [String])] = []

    package init() {}
}
