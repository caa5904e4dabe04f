import Foundation
import XCTest

/// The README and the guides in docs/ as a reader follows them: every relative link resolves to
/// a file of the repository, and a `#anchor` to a heading of its target (named as GitHub names
/// headings); the README stays a front door (small, and a map to every guide).
final class DocumentationLinkTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized

    /// README.md and every docs/*.md, as paths from the repository's root.
    static func documents() throws -> [String] {
        let guides = try FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md"] + guides
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// The lines that are prose: fenced code blocks left out.
    static func prose(_ text: String) -> [(number: Int, line: String)] {
        var fenced = false
        var lines: [(Int, String)] = []
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            if !fenced { lines.append((index + 1, line)) }
        }
        return lines
    }

    /// The anchors GitHub gives a file's headings: lower case, punctuation other than `-` and
    /// `_` dropped, spaces as `-`, and `-1`, `-2`, ... after a repeated one.
    static func anchors(_ text: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        for (_, line) in prose(text) {
            guard let space = line.firstIndex(of: " "), line.hasPrefix("#"),
                  line[..<space].allSatisfy({ $0 == "#" }) else { continue }
            let slug = String(line[line.index(after: space)...].lowercased().compactMap { c -> Character? in
                if c == " " { return "-" }
                return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
            })
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }

    /// The targets of a file's inline links `[text](target)`, outside code blocks and code spans.
    static func links(_ text: String) -> [(number: Int, target: String)] {
        let link = try! NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        var found: [(Int, String)] = []
        for (number, line) in prose(text) {
            // Code spans (`...`) are text, not links.
            let plain = line.replacingOccurrences(of: "`[^`]*`", with: "", options: .regularExpression)
            let range = NSRange(plain.startIndex..., in: plain)
            for match in link.matches(in: plain, range: range) {
                found.append((number, String(plain[Range(match.range(at: 1), in: plain)!])))
            }
        }
        return found
    }

    func testEveryRelativeLink_inTheReadmeAndTheGuides_resolvesToAFileAndItsAnchorToAHeading() throws {
        var checked = 0
        for document in try Self.documents() {
            let folder = (document as NSString).deletingLastPathComponent
            for (number, target) in Self.links(try Self.text(document)) {
                if target.hasPrefix("http://") || target.hasPrefix("https://") || target.hasPrefix("mailto:") { continue }
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let path = parts[0].isEmpty ? document
                    : ((folder as NSString).appendingPathComponent(parts[0]) as NSString).standardizingPath
                var isFolder: ObjCBool = false
                guard !path.hasPrefix(".."),
                      FileManager.default.fileExists(atPath: Self.repository.appendingPathComponent(path).path, isDirectory: &isFolder) else {
                    XCTFail("\(document):\(number): the link \(target) names \(path), which is not in the repository")
                    continue
                }
                guard parts.count == 2 else { continue }
                guard !isFolder.boolValue, path.hasSuffix(".md") else {
                    XCTFail("\(document):\(number): the link \(target) has an anchor into a file that is no Markdown")
                    continue
                }
                let anchors = Self.anchors(try Self.text(path))
                XCTAssertTrue(anchors.contains(parts[1]),
                              "\(document):\(number): \(path) has no heading #\(parts[1]) (it has: \(anchors.sorted().joined(separator: ", ")))")
            }
        }
        XCTAssertGreaterThan(checked, 50, "the links were not found")
    }

    func testAnchors_areGitHubs_punctuationDroppedAndRepeatsNumbered() {
        XCTAssertEqual(Self.anchors("# PostgreSQL: several hosts, one ledger\n## StoreKit 2 (signed transactions)\n## `settle status`\n## Measured\n### Measured\n"),
                       ["postgresql-several-hosts-one-ledger", "storekit-2-signed-transactions", "settle-status", "measured", "measured-1"])
        XCTAssertEqual(Self.anchors("```\n# not a heading\n```\n# Yes\n"), ["yes"])
        XCTAssertEqual(Self.links("[a](docs/x.md#y) `[b](not-a-link)` [c](https://example.com)\n```\n[d](in-code)\n```\n").map(\.target),
                       ["docs/x.md#y", "https://example.com"])
    }

    func testTheReadme_isAFrontDoor_atMost15KB_andLinksEveryGuide() throws {
        let readme = try Self.text("README.md")
        XCTAssertLessThanOrEqual(readme.utf8.count, 15_360, "the README grew past 15 KB: move the detail into a guide in docs/")
        let linked = Set(Self.links(readme).map { $0.target.split(separator: "#").first.map(String.init) ?? "" })
        for guide in try Self.documents().dropFirst() {
            XCTAssertTrue(linked.contains(guide), "README.md does not link \(guide)")
        }
    }
}
