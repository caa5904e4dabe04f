import Foundation
import SettleBase
import SettleModel
import SettleConfig

extension Configuration.ServerAPIConfiguration {
    /// The `.p8` key, refused unless it is private to its owner and an EC P-256 key.
    package func loadPrivateKey() throws(ConfigError) -> ES256PrivateKey {
        let secret = try privateKeyFile.read()
        do {
            return try ES256PrivateKey(pem: secret.value)
        } catch {
            throw ConfigError("\(privateKeyFile.key): \(privateKeyFile.path) is not a usable App Store Connect key: \(error)")
        }
    }

    /// The trusted roots; each file must hold at least one certificate.
    package func loadRoots() throws(ConfigError) -> [X509Certificate] {
        try Configuration.loadRoots(rootCertificates, key: "server_api.root_certificates")
    }

    /// The roots legacy app receipts are checked against; each file must hold at least one
    /// certificate.
    package func loadReceiptRoots() throws(ConfigError) -> [X509Certificate] {
        try Configuration.loadRoots(receiptRootCertificates, key: "server_api.receipt_root_certificates")
    }
}

extension Configuration {
    /// The roots StoreKit 2 signed data is checked against: `server_api.root_certificates`, or
    /// without `server_api` the Apple Root CA - G3 installed next to the configuration.
    package func storeKitRoots() throws(ConfigError) -> [X509Certificate] {
        if let serverAPI { return try serverAPI.loadRoots() }
        let folder = (sourcePath as NSString).deletingLastPathComponent
        return try Configuration.loadRoots([(folder as NSString).appendingPathComponent("AppleRootCA-G3.pem")],
                                           key: "AppleRootCA-G3.pem (next to the configuration)")
    }

    package static func loadRoots(_ paths: [String], key: String) throws(ConfigError) -> [X509Certificate] {
        var roots: [X509Certificate] = []
        for path in paths {
            do {
                let loaded = try X509Certificate.load(path: path)
                guard !loaded.isEmpty else { throw CryptoError("no certificate in the file") }
                roots += loaded
            } catch {
                throw ConfigError("\(key): cannot use \(path) as a root certificate: \(error)")
            }
        }
        return roots
    }
}
