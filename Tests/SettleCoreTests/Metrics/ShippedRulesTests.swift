import Foundation
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleDelivery
import SettleAppStoreModule

/// The alert rules and the Grafana dashboard shipped in config/ read only what the metrics file
/// holds: every metric they name is one settle writes, with the labels they select on, and every
/// alert says which settle command to run. (promtool checks their PromQL and tests the rules'
/// behaviour: scripts/alert-rules-test.sh.)
final class ShippedRulesTests: XCTestCase {
    static let config = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../config").standardized

    /// Each family of a metrics file rendered with one of everything observed, with the label
    /// names its series carry (a histogram's also under its _bucket, _sum and _count names).
    static func writtenFamilies() -> [String: Set<String>] {
        let metrics = Metrics()
        metrics.family(AppleRequestMetrics.self).observe(environment: .production, outcome: "ok", seconds: 0.1)
        metrics.observeDelivery(.delivered)
        metrics.observeNotification(type: "ONE_TIME_CHARGE", outcome: "order_created", at: 1)
        metrics.observeStoreRequest(store: "google_play", call: "products.get", outcome: "ok")
        metrics.observeStoreFinish(store: "google_play", outcome: "acknowledged")
        metrics.observePass(openBreakers: [.googlePlay], at: 2)
        metrics.observePacer([PacerSnapshot(key: PacerKey(store: "app_store", group: "transaction_info", environment: "Production"),
                                            rate: 25, ceilingRate: 50, configuredRate: 50, share: 1, granted: 9, throttles: 1,
                                            floorThrottles: 0, waits: 2)])
        var summary = LedgerSummary(counts: [.pending: 2], oldestUndeliveredSeconds: 5, orders: [])
        summary.storeCounts = [.appStore: [.pending: 1], .googlePlay: [.pending: 1]]
        let text = metrics.render(summary: summary, bundleId: "com.example.game", now: 3)
        var families: [String: Set<String>] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let words = line.split(separator: " ")
            let name = String(words[2])
            families[name] = []
            if words[3] == "histogram" { for suffix in ["_bucket", "_sum", "_count"] { families[name + suffix] = [] } }
        }
        let series = try! NSRegularExpression(pattern: #"^([a-z_]+)\{([^}]*)\}"#)
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let line = String(line)
            guard let match = series.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) else { continue }
            let name = String(line[Range(match.range(at: 1), in: line)!])
            let labels = line[Range(match.range(at: 2), in: line)!].split(separator: ",").map { String($0.prefix { $0 != "=" }) }
            families[name, default: []].formUnion(labels)
        }
        return families
    }

    /// Every `settle_...` metric a file names, with the label names of the selector after it.
    static func namedMetrics(in file: String) throws -> [(name: String, labels: [String])] {
        let text = try String(contentsOf: config.appendingPathComponent(file), encoding: .utf8)
        let selector = try NSRegularExpression(pattern: #"\b(settle_[a-z_]+)(\{([^}]*)\})?"#)
        return selector.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            let name = String(text[Range(match.range(at: 1), in: text)!])
            let labels = Range(match.range(at: 3), in: text).map { text[$0] }.map {
                $0.split(separator: ",").map { String($0.prefix { $0.isLetter || $0 == "_" }).trimmingCharacters(in: .whitespaces) }
            } ?? []
            return (name, labels)
        }
    }

    func testTheRulesAndTheDashboard_nameOnlyMetricsAndLabelsTheMetricsFileHolds() throws {
        let families = Self.writtenFamilies()
        XCTAssertNotNil(families["settle_play_ack_deadline_soon"], "the families were not read: \(families.keys.sorted())")
        for file in ["settle.rules.yml", "settle.grafana.json"] {
            let named = try Self.namedMetrics(in: file)
            XCTAssertGreaterThan(named.count, 8, file)
            for (name, labels) in named {
                guard let known = families[name] else {
                    XCTFail("\(file) names \(name), which settle does not write (it writes \(families.keys.sorted().joined(separator: ", ")))")
                    continue
                }
                for label in labels where !label.isEmpty {
                    XCTAssertTrue(known.contains(label), "\(file): \(name) has no label \(label) (it has \(known.sorted()))")
                }
            }
        }
    }

    func testEveryAlert_hasASeverity_andARunbookThatNamesASettleCommand() throws {
        let rules = try String(contentsOf: Self.config.appendingPathComponent("settle.rules.yml"), encoding: .utf8)
        let alerts = rules.components(separatedBy: "\n      - alert: ").dropFirst()
        XCTAssertEqual(alerts.count, 12, "the alerts were not found")
        for alert in alerts {
            let name = String(alert.prefix { $0 != "\n" })
            XCTAssertTrue(alert.contains("severity: critical") || alert.contains("severity: warning"), name)
            let runbook = alert.components(separatedBy: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("runbook: ") }
            XCTAssertNotNil(runbook?.range(of: #"\bsettle [a-z-]+"#, options: .regularExpression), "\(name): \(runbook ?? "no runbook")")
        }
    }
}
