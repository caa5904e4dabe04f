import Foundation
import SettleBase
import SettleModel

/// Turns the parsed JSON into a `Configuration`, checking every key, type and range.
package struct ConfigurationDecoder {
    package let path: String
    package let environment: [String: String]

    package var folder: String { (path as NSString).deletingLastPathComponent }

    /// Decodes every section even after one failed, so that `check-config` lists every
    /// mistake at once (one per line) instead of one per run.
    package func decode(_ json: JSONValue) throws(ConfigError) -> Configuration {
        var root = try ConfigObject(json, path: "")
        var problems: [String] = []
        func collect<T>(_ fallback: T, _ body: () throws(ConfigError) -> T) -> T {
            do { return try body() } catch { problems.append(error.message); return fallback }
        }
        let (ledger, postgresLedger) = collect(("", nil)) { () throws(ConfigError) in try decodeLedger(&root) }
        let bundleId = collect("") { () throws(ConfigError) in try root.requireString("bundle_id") }
        let acceptSandbox = collect(true) { () throws(ConfigError) in try root.bool("accept_sandbox", default: true) }
        let sections = ConfigurationSections.all
        var storeSettings: [String: any Sendable] = [:]
        for section in sections {
            storeSettings[section.key] = collect(nil) { () throws(ConfigError) in
                try root.object(section.key).map { (o) throws(ConfigError) in try section.decode(o, self) }
            }
        }
        var storeSections: [String: JSONValue] = [:]
        for key in StoreRegistry.descriptors.compactMap(\.configurationKey) {
            if let section = root.value(key) { storeSections[key] = section }
        }
        if sections.allSatisfy({ !$0.configuresStore || root.value($0.key) == nil }) && storeSections.isEmpty,
           let missing = sections.lazy.compactMap(\.whenNoStoreIsConfigured).first {
            problems.append(missing)
        }
        let products: [String: Configuration.Product] = collect([:]) { () throws(ConfigError) in
            guard let productsObject = try root.object("products") else { throw ConfigError("products: required key is missing") }
            return try decodeProducts(productsObject)
        }
        let prices = collect([:]) { () throws(ConfigError) in
            try root.object("prices").map { (o) throws(ConfigError) in try decodePrices(o, products: products) } ?? [:]
        }
        let delivery = collect(Configuration.DeliveryConfiguration(method: .command(["/"]), timeoutSeconds: 30)) { () throws(ConfigError) in
            guard let deliveryObject = try root.object("delivery") else { throw ConfigError("delivery: required key is missing") }
            return try decodeDelivery(deliveryObject)
        }
        let schedule = collect(Configuration.Schedule()) { () throws(ConfigError) in
            try root.object("schedule").map { (o) throws(ConfigError) in try decodeSchedule(o) } ?? Configuration.Schedule()
        }
        let http = collect(Configuration.HTTPSettings()) { () throws(ConfigError) in
            try root.object("http").map { (o) throws(ConfigError) in try decodeHTTP(o) } ?? Configuration.HTTPSettings()
        }
        let metricsFile = collect(nil) { () throws(ConfigError) in try root.string("metrics_file").map(resolve) }
        let grace = collect(20) { () throws(ConfigError) in try root.number("shutdown_grace_seconds", default: 20, range: 0...600) }
        let binding = collect(UserBinding()) { () throws(ConfigError) in
            try root.object("user_binding").map { (o) throws(ConfigError) in try decodeUserBinding(o) } ?? UserBinding()
        }
        let logLevel = collect(Log.Level.info) { () throws(ConfigError) in try choice(&root, "log_level", default: Log.Level.info) }
        let retentionDays: Int? = collect(nil) { () throws(ConfigError) in
            guard var retention = try root.object("retention") else { return nil }
            defer { if let unknown = retention.unknownKeys() { problems.append(unknown) } }
            guard retention.value("history_days") != nil else { return nil }
            return try retention.integer("history_days", default: 0, range: 1...36500)
        }
        let notifications = collect(nil) { () throws(ConfigError) in
            try root.object("notifications").map { (o) throws(ConfigError) in try decodeNotifications(o) }
        }
        let web = collect(nil) { () throws(ConfigError) in
            try root.object("web").map { (o) throws(ConfigError) in try decodeWeb(o) }
        }
        let refunds = collect(Configuration.Refunds()) { () throws(ConfigError) in
            try root.object("refunds").map { (o) throws(ConfigError) in try decodeRefunds(o) }
                ?? Configuration.Refunds()
        }
        var configuration = Configuration(ledgerPath: ledger, bundleId: bundleId, acceptSandbox: acceptSandbox,
                                          products: products, delivery: delivery, schedule: schedule, http: http,
                                          metricsFile: metricsFile, shutdownGraceSeconds: grace, sourcePath: path)
        configuration.userBinding = binding
        configuration.prices = prices
        configuration.storeSections = storeSections
        configuration.postgresLedger = postgresLedger
        configuration.logLevel = logLevel
        configuration.historyRetentionDays = retentionDays
        configuration.notifications = notifications
        configuration.storeSettings = storeSettings
        if let web { configuration.web = web }
        configuration.refunds = refunds
        for section in sections { problems += section.problems?(configuration) ?? [] }
        if let unknown = root.unknownKeys() { problems.append(unknown) }
        guard problems.isEmpty else { throw ConfigError(problems.joined(separator: "\n")) }
        for section in sections { try section.check?(configuration) }
        return configuration
    }

    /// `rate_limits`: an object of endpoint group to requests a second, each group one the store
    /// publishes a limit for and each rate a positive number.
    package func rateLimits(_ o: inout ConfigObject, groups: [String: Double]) throws(ConfigError) -> [String: Double] {
        guard var limits = try o.object("rate_limits") else { return [:] }
        var rates: [String: Double] = [:]
        for group in limits.allKeys() {
            guard groups[group] != nil else {
                let known = groups.keys.sorted().joined(separator: ", ")
                throw ConfigError("\(limits.name(group)): unknown endpoint group (expected one of \(known))")
            }
            rates[group] = try limits.number(group, default: 0, range: 0.001...1_000_000)
        }
        return rates
    }

    /// A non-empty array of certificate paths, each resolved from the configuration's folder.
    package func paths(_ o: inout ConfigObject, _ key: String, default name: String) throws(ConfigError) -> [String] {
        guard let value = o.value(key) else { return [resolve(name)] }
        guard let items = value.arrayValue, !items.isEmpty else {
            throw ConfigError("\(o.name(key)): expected a non-empty array of paths")
        }
        var paths: [String] = []
        for (i, item) in items.enumerated() {
            guard case let .string(p) = item, !p.isEmpty else {
                throw ConfigError("\(o.name(key))[\(i)]: expected a path string, got \(item.typeName)")
            }
            paths.append(resolve(p))
        }
        return paths
    }

    private func decodeUserBinding(_ object: ConfigObject) throws(ConfigError) -> UserBinding {
        var o = object
        var binding = UserBinding()
        binding.tokenSource = try choice(&o, "app_account_token", default: binding.tokenSource)
        if let text = try o.string("uuid5_namespace") {
            guard let uuid = UUID(uuidString: text) else { throw ConfigError("\(o.name("uuid5_namespace")): \"\(text)\" is not a UUID") }
            binding.namespace = uuid
        }
        if binding.tokenSource == .uuid5 && binding.namespace == nil {
            throw ConfigError("\(o.name("uuid5_namespace")): required when app_account_token is \"uuid5\"")
        }
        binding.unsignedProofs = try choice(&o, "unsigned_proofs", default: binding.unsignedProofs)
        binding.tokenlessSignedProofs = try choice(&o, "tokenless_signed_proofs", default: binding.tokenlessSignedProofs)
        try o.rejectUnknownKeys()
        return binding
    }

    /// A string naming one case of `T`.
    private func choice<T: RawRepresentable & CaseIterable>(_ o: inout ConfigObject, _ key: String, default fallback: T)
        throws(ConfigError) -> T where T.RawValue == String {
        guard let text = try o.string(key) else { return fallback }
        guard let value = T(rawValue: text) else {
            let allowed = T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            throw ConfigError("\(o.name(key)): \"\(text)\" is not one of \(allowed)")
        }
        return value
    }

    private func decodeProducts(_ object: ConfigObject) throws(ConfigError) -> [String: Configuration.Product] {
        var o = object
        var products: [String: Configuration.Product] = [:]
        var problems: [String] = []
        for key in o.allKeys() {
            do {
                products[key] = try decodeProduct(&o, key)
            } catch {
                problems.append(error.message)
            }
        }
        guard problems.isEmpty else { throw ConfigError(problems.joined(separator: "\n")) }
        guard !products.isEmpty else { throw ConfigError("products: at least one product is required") }
        return products
    }

    private func decodeProduct(_ o: inout ConfigObject, _ key: String) throws(ConfigError) -> Configuration.Product {
        do {
            guard var product = try o.object(key) else { throw ConfigError("\(o.name(key)): expected an object") }
            let typeName = try product.requireString("type")
            guard let kind = Configuration.Product.Kind(rawValue: typeName) else {
                let allowed = Configuration.Product.Kind.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigError("\(product.name("type")): \"\(typeName)\" is not one of \(allowed)")
            }
            var grant: JSONValue? = nil
            if let value = product.value("grant") {
                guard value.objectMembers != nil else { throw ConfigError("\(product.name("grant")): expected an object, got \(value.typeName)") }
                grant = value
            }
            var stores = StoreRegistry.defaultProductStores
            if let store = try product.string("store") {
                // A registered store's name, or an alias the stores' descriptors give for several ("both").
                if let one = Store.registered(store) {
                    stores = [one]
                } else if let several = StoreRegistry.productStores(alias: store) {
                    stores = several
                } else {
                    let names = (Store.allCases.map(\.rawValue) + StoreRegistry.productStoreAliases).map { "\"\($0)\"" }
                        .joined(separator: ", ")
                    throw ConfigError("\(product.name("store")): \"\(store)\" is not one of \(names)")
                }
            }
            var result = Configuration.Product(kind: kind, grant: grant, stores: stores)
            if let option = try product.string("purchase_option") {
                let optionStores = StoreRegistry.purchaseOptionStores
                guard stores.contains(where: { store in optionStores.contains { $0.store == store } }), kind != .autoRenewable,
                      !option.isEmpty else {
                    let names = optionStores.map { $0.displayName }.joined(separator: " or ")
                    throw ConfigError("\(product.name("purchase_option")): only a \(names) one-time product has purchase options")
                }
                result.purchaseOption = option
            }
            if let period = try product.string("rental_period") {
                guard result.purchaseOption != nil else {
                    throw ConfigError("\(product.name("rental_period")): a rental is a purchase option: name it in purchase_option")
                }
                guard let seconds = Self.durationSeconds(period), seconds > 0 else {
                    throw ConfigError("\(product.name("rental_period")): \"\(PrintableText.escape(period))\" is not an ISO 8601 duration "
                                      + "of weeks, days, hours, minutes or seconds (like P2D or PT48H), as Play Console shows the rental period")
                }
                result.rentalPeriodSeconds = seconds
            }
            try product.rejectUnknownKeys()
            return result
        }
    }

    /// An ISO 8601 duration of weeks, days, hours, minutes and seconds (`P2D`, `PT48H`,
    /// `P1DT12H`) in seconds; nil for anything else (months and years have no fixed length).
    package static func durationSeconds(_ text: String) -> Int64? {
        guard text.hasPrefix("P"), text.count > 1 else { return nil }
        var total: Int64 = 0
        var number = ""
        var inTime = false
        var seen = false
        for c in text.dropFirst() {
            if c.isASCII && c.isNumber { number.append(c); continue }
            if c == "T" && !inTime && number.isEmpty { inTime = true; continue }
            guard let n = Int64(number), n <= 100_000 else { return nil }
            let unit: Int64
            switch (c, inTime) {
            case ("W", false): unit = 604_800
            case ("D", false): unit = 86_400
            case ("H", true): unit = 3600
            case ("M", true): unit = 60
            case ("S", true): unit = 1
            default: return nil
            }
            total += n * unit
            number = ""
            seen = true
        }
        return seen && number.isEmpty ? total : nil
    }

    private func decodeDelivery(_ object: ConfigObject) throws(ConfigError) -> Configuration.DeliveryConfiguration {
        var o = object
        let command = o.value("command")
        let webhook = try o.object("webhook")
        let timeout = try o.number("timeout_seconds", default: 30, range: 0.1...3600)
        let passed = try environmentNames(o.value("environment"))
        let batchSize = try o.integer("batch_size", default: 1, range: 1...1000)
        var revokeCommand: [String]? = nil
        var revokeURL: String? = nil
        if let value = o.value("revoke_command") {
            guard let items = value.arrayValue, !items.isEmpty,
                  case let .string(program)? = items.first, program.hasPrefix("/") else {
                throw ConfigError("delivery.revoke_command: expected a non-empty array of strings starting with an absolute path")
            }
            revokeCommand = try items.enumerated().map { (i, item) throws(ConfigError) -> String in
                guard case let .string(s) = item else { throw ConfigError("delivery.revoke_command[\(i)]: expected a string, got \(item.typeName)") }
                return s
            }
        }
        let method: Configuration.DeliveryConfiguration.Method
        switch (command, webhook) {
        case (nil, nil), (.some, .some):
            throw ConfigError("delivery: exactly one of \"command\" or \"webhook\" is required")
        case let (.some(value), nil):
            guard let items = value.arrayValue, !items.isEmpty else {
                throw ConfigError("delivery.command: expected a non-empty array of strings (argv, run without a shell)")
            }
            var argv: [String] = []
            for (i, item) in items.enumerated() {
                guard case let .string(s) = item else {
                    throw ConfigError("delivery.command[\(i)]: expected a string, got \(item.typeName)")
                }
                argv.append(s)
            }
            guard argv[0].hasPrefix("/") else {
                throw ConfigError("delivery.command[0]: \"\(argv[0])\" must be an absolute path (no PATH search, no shell)")
            }
            method = .command(argv)
        case let (nil, .some(hook)):
            var h = hook
            guard let url = try h.string("url") else { throw ConfigError("delivery.webhook.url: required key is missing") }
            try checkURL(url, name: "delivery.webhook.url")
            let secret = try secretFile(&h, "secret_file")
            // Revokes go to a URL of their own: a receiver written for grants never sees one.
            if let revoke = try h.string("revoke_url") {
                try checkURL(revoke, name: "delivery.webhook.revoke_url")
                guard !ConfigurationDecoder.sameEndpoint(revoke, url) else {
                    throw ConfigError("delivery.webhook.revoke_url: must differ from delivery.webhook.url by more than a trailing slash "
                                      + "or a query string (a grant receiver must never get a revoke)")
                }
                revokeURL = revoke
            }
            try h.rejectUnknownKeys()
            guard passed.isEmpty else { throw ConfigError("delivery.environment: only a delivery.command has an environment") }
            guard batchSize == 1 else { throw ConfigError("delivery.batch_size: only a delivery.command takes batches") }
            method = .webhook(url: url, secretFile: secret)
        }
        try o.rejectUnknownKeys()
        if revokeCommand != nil, case .webhook = method {
            throw ConfigError("delivery.revoke_command: a webhook delivery posts revokes to delivery.webhook.revoke_url; drop revoke_command")
        }
        var delivery = Configuration.DeliveryConfiguration(method: method, timeoutSeconds: timeout, environment: passed,
                                                           revokeCommand: revokeCommand)
        delivery.revokeURL = revokeURL
        delivery.batchSize = batchSize
        return delivery
    }

    /// `delivery.environment`: variable names only (`[A-Za-z_][A-Za-z0-9_]*`); a value
    /// (`NAME=value`) is refused, since values belong in settle's environment, not in its
    /// configuration file.
    private func environmentNames(_ value: JSONValue?) throws(ConfigError) -> [String] {
        guard let value else { return [] }
        guard let items = value.arrayValue else {
            throw ConfigError("delivery.environment: expected an array of variable names, got \(value.typeName)")
        }
        var names: [String] = []
        for (i, item) in items.enumerated() {
            guard case let .string(name) = item else {
                throw ConfigError("delivery.environment[\(i)]: expected a variable name, got \(item.typeName)")
            }
            let isName = name.unicodeScalars.first.map { $0 == "_" || ($0.isASCII && $0.properties.isAlphabetic) } == true
                && name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
            guard isName else {
                throw ConfigError("delivery.environment[\(i)]: \"\(PrintableText.escape(name))\" is not a variable name (letters, digits, _; no \"=\")")
            }
            names.append(name)
        }
        return names
    }

    private func decodeSchedule(_ object: ConfigObject) throws(ConfigError) -> Configuration.Schedule {
        let keys: Set = ["interval_seconds", "concurrency", "max_attempts", "backoff_base_seconds", "backoff_max_seconds"]
        return try object.decode(knownKeys: keys) { (o) throws(ConfigError) in try schedule(&o) }
    }

    private func schedule(_ o: inout ConfigObject) throws(ConfigError) -> Configuration.Schedule {
        var s = Configuration.Schedule()
        s.intervalSeconds = try o.number("interval_seconds", default: s.intervalSeconds, range: 1...86400)
        s.concurrency = try o.integer("concurrency", default: s.concurrency, range: 1...64)
        s.maxAttempts = try o.integer("max_attempts", default: s.maxAttempts, range: 1...1000)
        s.backoffBaseSeconds = try o.number("backoff_base_seconds", default: s.backoffBaseSeconds, range: 1...86400)
        s.backoffMaxSeconds = try o.number("backoff_max_seconds", default: s.backoffMaxSeconds, range: 1...(30 * 86400))
        guard s.backoffMaxSeconds >= s.backoffBaseSeconds else {
            throw ConfigError("schedule.backoff_max_seconds: must be at least backoff_base_seconds")
        }
        try o.rejectUnknownKeys()
        return s
    }

    private func decodeHTTP(_ object: ConfigObject) throws(ConfigError) -> Configuration.HTTPSettings {
        try object.decode(knownKeys: ["connect_timeout_seconds", "timeout_seconds"]) { (o) throws(ConfigError) in
            var h = Configuration.HTTPSettings()
            h.connectTimeoutSeconds = try o.number("connect_timeout_seconds", default: h.connectTimeoutSeconds, range: 0.1...300)
            h.timeoutSeconds = try o.number("timeout_seconds", default: h.timeoutSeconds, range: 0.1...600)
            try o.rejectUnknownKeys()
            return h
        }
    }

    // MARK: - Values

    package func url(_ o: inout ConfigObject, _ key: String, default fallback: String) throws(ConfigError) -> String {
        let value = try o.string(key) ?? fallback
        try checkURL(value, name: o.name(key))
        return value
    }

    /// `https://` only, except plain `http://` to a loopback address for tests and the simulator.
    package func checkURL(_ text: String, name: String) throws(ConfigError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty else {
            // Not quoted: a URL may carry credentials (user info, a token in the query).
            throw ConfigError("\(name): not a URL with a scheme and a host")
        }
        if scheme == "https" { return }
        if scheme == "http" && ConfigurationDecoder.isLoopback(host) { return }
        throw ConfigError("\(name): must be an https:// URL (http:// is allowed only to a loopback address)")
    }

    /// Whether two URLs reach the same handler as a web server routes them: same scheme, host
    /// (any case) and port (the scheme's default spelled or not), and the same path once dot
    /// segments, repeated and trailing slashes are gone; user info, query and fragment are not
    /// routing. A revoke URL that differs from the grant URL only there reaches the grant receiver.
    package static func sameEndpoint(_ a: String, _ b: String) -> Bool {
        func key(_ text: String) -> String? {
            guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(), let host = c.host?.lowercased() else { return nil }
            let port = c.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
            var segments: [String] = []
            for segment in c.percentEncodedPath.split(separator: "/") {
                let decoded = segment.removingPercentEncoding ?? String(segment)
                if decoded == "." { continue }
                if decoded == ".." { _ = segments.popLast(); continue }
                segments.append(decoded)
            }
            return "\(scheme)://\(host):\(port)/" + segments.joined(separator: "/")
        }
        guard let left = key(a), let right = key(b) else { return a == b }
        return left == right
    }

    package static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if h == "localhost" || h == "::1" { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    package func secretFile(_ o: inout ConfigObject, _ key: String) throws(ConfigError) -> SecretFile {
        let name = try o.requireString(key)
        return SecretFile(key: o.name(key), path: SecretFile.resolve(name, relativeTo: folder, environment: environment),
                          searched: SecretFile.candidates(name, relativeTo: folder, environment: environment))
    }

    /// A path (SQLite), a PostgreSQL URL, or an object with the URL and a password file. For
    /// PostgreSQL the path is empty: the URL is a secret, shown only as SettleLedger's
    /// `ledgerLocation` (libpq's reading of it, without the password).
    private func decodeLedger(_ root: inout ConfigObject) throws(ConfigError) -> (String, PostgresLedgerConfiguration?) {
        guard case .object = root.value("ledger") else {
            let text = try root.requireString("ledger")
            guard PostgresLedgerConfiguration.isPostgresURL(text) else { return (resolve(text), nil) }
            return ("", PostgresLedgerConfiguration(url: Secret(text), passwordFile: nil))
        }
        guard var o = try root.object("ledger") else { throw ConfigError("ledger: required key is missing") }
        let url = try o.requireString("url")
        guard PostgresLedgerConfiguration.isPostgresURL(url) else {
            throw ConfigError("\(o.name("url")): expected a postgresql:// URL (an SQLite ledger is given as a path string)")
        }
        let passwordFile = o.value("password_file") == nil ? nil : try secretFile(&o, "password_file")
        try o.rejectUnknownKeys()
        return ("", PostgresLedgerConfiguration(url: Secret(url), passwordFile: passwordFile))
    }

    private func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : (folder as NSString).appendingPathComponent(path)
    }
}
