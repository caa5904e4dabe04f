import Foundation
import SettleBase
import SettleConfig
import SettleHuawei
import SettleSimulator

/// `settle simulator`'s Huawei AppGallery: the fake IAP Kit (`FakeHuawei`) on a loopback port of
/// its own, accepting the configuration's IAP key, or a throwaway one written to `--huawei-key`.
package final class HuaweiSimulator: StoreSimulator {
    /// The APP ID the simulator stands in for without a configuration.
    package static let defaultAppId = "10000001"
    package static let defaultIssuerId = "simulator-issuer"
    package static let defaultKeyId = "simulator-key"

    package static let script: any StoreScript.Type = HuaweiScript.self
    package static let options = [(name: "--huawei-key", value: "FILE"), (name: "--huawei-root", value: "FILE")]

    package static let help = """
        Huawei AppGallery: a fake HarmonyOS IAP Kit on a port of its own (order and subscription
        status queries, shipped confirm), when the configuration has a huawei section (its IAP key is
        accepted), or when --huawei-key FILE is given (a throwaway IAP key is written there, mode
        600, for APP ID \(defaultAppId), issuer \(defaultIssuerId), key \(defaultKeyId)). It signs its answers with a
        test chain whose root --huawei-root FILE saves: point a test configuration's
        huawei.root_certificates at it, never a production one. With --huawei-key it also serves HMS
        IAP (token endpoint, tokens/verify, confirm, cancelledList) for the same APP ID, writing its
        client secret to FILE.hms-secret (mode 600) and its IAP public key to FILE.hms-public-key.
        The plans file's "huawei" section scripts its purchases (docs/huawei.md).
        """

    let fake: FakeHuawei
    let server: LoopbackHTTPServer
    let script: HuaweiScript
    let source: String
    var hms: FakeHMS?

    private init(fake: FakeHuawei, server: LoopbackHTTPServer, script: HuaweiScript, source: String) {
        (self.fake, self.server, self.script, self.source) = (fake, server, script, source)
    }

    package static func start(_ setup: StoreSimulatorSetup) throws -> HuaweiSimulator? {
        let appId: String
        let key: ES256PublicKey
        let source: String
        if let huawei = setup.configuration?.huawei, let kit = huawei.iapKit {
            appId = huawei.appId
            key = try kit.loadPrivateKey().publicKey
            source = "JWTs signed by key \(kit.keyId) in \(kit.privateKeyFile.path)"
        } else if let path = setup.options["--huawei-key"] {
            let pem = try ES256PrivateKey.generatePEM()
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600])
            else {
                throw StoreSimulatorFailure.io("cannot write the simulator's Huawei IAP key to \(path)")
            }
            appId = defaultAppId
            key = try ES256PrivateKey(pem: pem).publicKey
            source = "JWTs signed by the throwaway IAP key written to \(path)"
        } else {
            return nil
        }
        if let path = setup.options["--huawei-root"] {
            guard FileManager.default.createFile(atPath: path, contents: Data(HuaweiSimulatorChain.rootPEM.utf8)) else {
                throw StoreSimulatorFailure.io("cannot write the simulator's Huawei root certificate to \(path)")
            }
        }
        var hms: FakeHMS?
        if let path = setup.options["--huawei-key"], setup.configuration?.huawei?.iapKit == nil {
            let secret = "simulator-hms-secret-" + UUID().uuidString
            let rsa = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
            guard
                FileManager.default.createFile(
                    atPath: path + ".hms-secret", contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600]),
                FileManager.default.createFile(
                    atPath: path + ".hms-public-key",
                    contents: Data((rsa.subjectPublicKeyInfo.base64EncodedString() + "\n").utf8))
            else {
                throw StoreSimulatorFailure.io(
                    "cannot write the simulator's HMS client secret and public key next to \(path)")
            }
            hms = FakeHMS(appId: appId, clientSecret: secret, key: rsa, time: SystemTimeSource())
        }
        let fake: FakeHuawei
        let server: LoopbackHTTPServer
        do {
            fake = try FakeHuawei(appId: appId, publicKey: key, time: SystemTimeSource())
            let both = hms, faults = setup.faults
            faults.register("huawei")
            server = try LoopbackHTTPServer(port: setup.port) { request in
                faults.front(request, store: "huawei") ?? both?.handle(request) ?? fake.handle(request)
            }
        } catch {
            throw StoreSimulatorFailure.unavailable("cannot start the simulated Huawei AppGallery: \(error)")
        }
        let script = setup.script.huawei
        script.apply(to: fake)
        if let hms { script.apply(to: hms) }
        let simulator = HuaweiSimulator(fake: fake, server: server, script: script, source: source)
        simulator.hms = hms
        return simulator
    }

    package var baseURL: String { server.baseURL }

    package var banner: String {
        let scripted = [Plural.count(script.orders.count, "Huawei order"),
                        Plural.count(script.subscriptions.count, "Huawei subscription"),
                        Plural.count(script.hmsPurchases.count, "HMS purchase")]
        return """
        huawei.api_url: \(server.baseURL)
        huawei.app_id: \(fake.appId), accepting \(source)
        scripted: \(scripted.joined(separator: ", "))
        """
            + (hms == nil
                ? ""
                : """

                huawei.hms.order_url: \(server.baseURL)/site
                huawei.hms.apptouch_order_url: \(server.baseURL)/apptouch
                huawei.hms.subscription_url: \(server.baseURL)/subscriptions
                huawei.hms.apptouch_subscription_url: \(server.baseURL)/apptouch-subscriptions
                huawei.hms.token_url: \(server.baseURL)/oauth2/v3/token
                """)
    }

    package var requestCount: Int { fake.calls.count + (hms?.calls.count ?? 0) }

    package func stop() { server.stop() }
}
