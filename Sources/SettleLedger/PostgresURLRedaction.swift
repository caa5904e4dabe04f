import CPostgres
import Foundation
import SettleConfig

/// Showing a PostgreSQL URL without its passwords. It lives with the ledger, the one target
/// that links libpq, because libpq's own parser decides what the URL holds.
extension PostgresLedger {
    /// A PostgreSQL URL as settle prints it (check-config, migrate, ledger copy, logs, status):
    /// rebuilt from what libpq itself reads out of it, without any password. A password can hide
    /// in the user info, in `?password=`, or after the first host of a multi-host URL; parsing
    /// the text ourselves would miss what libpq finds, so libpq's own parser decides
    /// (https://www.postgresql.org/docs/current/libpq-misc.html#LIBPQ-PQCONNINFOPARSE:
    /// "returns parsed connection options from the provided connection string"). A URL libpq
    /// cannot read is not shown at all.
    package static func redacted(_ url: String) -> String {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &message) else {
            // The error message may quote the URL: freed unread.
            if let message { PQfreemem(message) }
            return "postgresql://(a URL libpq cannot read; not shown)"
        }
        defer { PQconninfoFree(options) }
        var given: [(String, String)] = []
        var secret: Set<String> = ["password", "sslpassword"]
        var option = options
        while let keyword = option.pointee.keyword {
            let name = String(cString: keyword)
            // libpq marks the options whose value it hides itself ("*": "Password field - hide
            // value", https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PQCONNDEFAULTS):
            // password and sslpassword today, and whatever a newer libpq adds.
            if let display = option.pointee.dispchar, String(cString: display) == "*" { secret.insert(name) }
            if let value = option.pointee.val { given.append((name, String(cString: value))) }
            option += 1
        }
        return display(given, secret: secret)
    }

    /// A URI from libpq's keywords and values, the passwords left out (and said to be).
    private static func display(_ given: [(String, String)], secret: Set<String>) -> String {
        let values = Dictionary(given, uniquingKeysWith: { first, _ in first })
        let component = CharacterSet.urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@/?#[]"))
        func encode(_ text: String, _ allowed: CharacterSet) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        var query: [(String, String)] = []
        var text = "postgresql://"
        if let user = values["user"], !user.isEmpty { text += encode(user, component) + "@" }
        let hosts = values["host"].map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? []
        let ports = values["port"].map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? []
        if hosts.contains(where: { $0.hasPrefix("/") }) {
            // Unix-domain socket folders are no URI authority: they go in the query, as libpq allows.
            values["host"].map { query.append(("host", $0)) }
            values["port"].map { query.append(("port", $0)) }
        } else {
            let count = max(hosts.count, ports.count)
            text += (0..<count).map { index -> String in
                let host = index < hosts.count ? hosts[index] : ""
                let port = ports.count == 1 ? ports[0] : index < ports.count ? ports[index] : ""
                let shown = host.contains(":") ? "[\(host)]" : encode(host, component)
                return shown + (port.isEmpty ? "" : ":\(encode(port, component))")
            }.joined(separator: ",")
        }
        if let database = values["dbname"] { text += "/" + encode(database, component) }
        for (keyword, value) in given where !["user", "host", "port", "dbname"].contains(keyword) && !secret.contains(keyword) {
            query.append((keyword, value))
        }
        for (keyword, _) in given where secret.contains(keyword) { query.append((keyword, "redacted")) }
        guard !query.isEmpty else { return text }
        let queryValue = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+#"))
        return text + "?" + query.map { "\($0.0)=\(encode($0.1, queryValue))" }.joined(separator: "&")
    }
}

extension Configuration {
    /// Which ledger this is, for people (check-config, migrate, the `daemon.started` line, the
    /// reload check): the SQLite file, or the PostgreSQL URL as libpq reads it, without its
    /// password (`PostgresLedger.redacted`).
    package var ledgerLocation: String {
        guard let postgres = postgresLedger else { return ledgerPath }
        return PostgresLedger.redacted(postgres.url.value)
    }
}
