import Foundation
import SettleBase
import XCTest

/// `settle web` as an operator runs it: the built binary, its own process, real HTTP.
class WebEndToEndTestCase: EndToEndTestCase {
    var running: [SettleBinary.Running] = []
    let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 20))

    override func tearDownWithError() throws {
        for process in running where process.isRunning {
            process.send(SIGTERM)
            _ = process.wait()
        }
        running = []
        try super.tearDownWithError()
    }

    /// Starts `settle web` on a port the kernel picks and waits for its "listening on" line;
    /// returns the process and its base URL.
    func startWeb(_ extra: [String] = [], config: String? = nil, file: StaticString = #filePath,
                  line: UInt = #line) throws -> (SettleBinary.Running, String) {
        let process = try SettleBinary.start(["web", "--config", config ?? world.configPath, "--listen", "127.0.0.1:0"] + extra,
                                             outputFolder: world.folder)
        running.append(process)
        var base: String?
        _ = eventually(within: 20) {
            let out = (try? String(contentsOfFile: process.stdoutPath, encoding: .utf8)) ?? ""
            if let range = out.range(of: "listening on http://") {
                base = "http://" + out[range.upperBound...].prefix { $0 != "/" }
            }
            return base != nil || !process.isRunning
        }
        guard let base else {
            let result = process.wait()
            XCTFail("settle web did not start: \(result.status) \(result.stderr)", file: file, line: line)
            throw CocoaError(.fileReadUnknown)
        }
        return (process, base)
    }

    func get(_ url: String, headers: [HTTPHeader] = []) throws -> HTTPResponse {
        try client.send(HTTPRequest(method: "GET", url: url, headers: headers))
    }
}
