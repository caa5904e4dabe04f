import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// A store's part of `settle demo`: its stand-in on loopback, its files and configuration
/// sections, its orders, and what it shows once they were reconciled. The demo command tells the
/// story in the stores' registration order and names none; what names a store comes from here.
package protocol DemoChapter: AnyObject {
    /// What its part of the demo shows, for `settle demo --help`: a sentence or two.
    static var synopsis: String { get }

    /// Starts its stand-in and writes its files (keys, secrets) into the demo's folder.
    init(_ setting: DemoSetting) throws(DemoFailure)

    /// Its stand-in as the demo's first line names it ("Apple simulator at http://..."); nil: not named.
    var headline: String? { get }
    /// The files it wrote into the folder, for the line `--keep` prints.
    var files: [String] { get }
    /// Its top-level configuration sections, after the core's own.
    var sections: [(String, JSONValue)] { get }
    /// Its products, by product id, after the core's.
    var products: [(String, JSONValue)] { get }

    /// The orders it scripted its stand-in for, one of each kind it shows.
    func orders(now: Date) throws -> [NewOrder]
    /// What it shows after the first two passes and the status table (an order's story, what its store was told).
    func afterPasses(_ stage: DemoStage) throws
    /// Acts of its own once the delivery hook's log is shown (its store tells settle of a refund...).
    func laterActs(_ stage: DemoStage) throws
    /// Stops its stand-in.
    func stop()
}

extension DemoChapter {
    package var headline: String? { nil }
    package var products: [(String, JSONValue)] { [] }
    package func afterPasses(_ stage: DemoStage) throws {}
    package func laterActs(_ stage: DemoStage) throws {}
}

/// Where a chapter starts: the demo's folder, its simulated clock, and the app every store sells.
package struct DemoSetting: Sendable {
    package var folder: String
    package var time: ManualTimeSource
    package var bundleId: String

    package init(folder: String, time: ManualTimeSource, bundleId: String) {
        self.folder = folder
        self.time = time
        self.bundleId = bundleId
    }
}

/// What a chapter tells its story with once the orders were reconciled: the ledger and reconciler
/// of the demo, and the demo command's output and order views.
package struct DemoStage {
    package var folder: String
    package var time: ManualTimeSource
    package var ledger: SQLiteLedger
    package var reconciler: Reconciler
    /// Prints a line (or lines) of the story.
    package var print: (String) -> Void
    /// An order as `settle status --order` shows it, with the notifications it was told of when
    /// asked; nil when unknown.
    package var orderText: (_ orderId: String, _ withNotifications: Bool) throws -> String?

    package init(folder: String, time: ManualTimeSource, ledger: SQLiteLedger, reconciler: Reconciler,
                 print: @escaping (String) -> Void,
                 orderText: @escaping (_ orderId: String, _ withNotifications: Bool) throws -> String?) {
        self.folder = folder
        self.time = time
        self.ledger = ledger
        self.reconciler = reconciler
        self.print = print
        self.orderText = orderText
    }
}

/// Why the demo cannot go on: a stand-in cannot listen, a file cannot be written.
package struct DemoFailure: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable {
        /// Something the demo needs is not available (a loopback port).
        case unavailable
        /// A file of the demo's folder cannot be written or read.
        case io
    }

    package var kind: Kind
    package var message: String
    package var description: String { message }

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
