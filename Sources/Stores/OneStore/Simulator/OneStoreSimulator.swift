import Foundation
import SettleBase
import SettleConfig
import SettleOneStore
import SettleSimulator

/// `settle simulator`'s ONE store: the fake API V7 on a port of its own, with `--one-store-key FILE`
/// (a throwaway client secret written to FILE, mode 600, and the license key's public half to
/// FILE.license) for client `0000000001`, package `com.example.game`.
package final class OneStoreSimulator: StoreSimulator {
    package static let defaultClientId = "0000000001"

    package static let script: any StoreScript.Type = OneStoreScript.self
    package static let options = [(name: "--one-store-key", value: "FILE")]

    package static let help = """
        ONE store: a fake ONE store API V7 on a port of its own (token endpoint, purchase details,
        acknowledge, consume; /commercial and /sandbox roots, market codes), when --one-store-key FILE
        is given: a throwaway client secret is written there (mode 600) and the license key's public half
        to FILE.license, for client \(defaultClientId). The plans file's "one_store" section scripts its
        purchases (docs/one-store.md).
        """

    let fake: FakeOneStore
    let server: LoopbackHTTPServer
    let script: OneStoreScript

    private init(fake: FakeOneStore, server: LoopbackHTTPServer, script: OneStoreScript) {
        (self.fake, self.server, self.script) = (fake, server, script)
    }

    package static func start(_ setup: StoreSimulatorSetup) throws -> OneStoreSimulator? {
        guard let path = setup.options["--one-store-key"] else { return nil }
        let secret = "simulator-one-store-secret-" + UUID().uuidString
        let key = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600]),
            FileManager.default.createFile(
                atPath: path + ".license", contents: Data((key.subjectPublicKeyInfo.base64EncodedString() + "\n").utf8))
        else {
            throw StoreSimulatorFailure.io("cannot write the simulator's ONE store secret and license key at \(path)")
        }
        let fake = FakeOneStore(
            clientId: defaultClientId, clientSecret: secret, packageName: setup.bundleId, licenseKey: key,
            time: SystemTimeSource())
        let server: LoopbackHTTPServer
        do {
            let faults = setup.faults
            faults.register("one_store")
            server = try LoopbackHTTPServer(port: setup.port) {
                faults.front($0, store: "one_store") ?? fake.handle($0)
            }
        } catch {
            throw StoreSimulatorFailure.unavailable("cannot start the simulated ONE store: \(error)")
        }
        let script = setup.script.oneStore
        script.apply(to: fake)
        return OneStoreSimulator(fake: fake, server: server, script: script)
    }

    package var baseURL: String { server.baseURL }

    package var banner: String {
        """
        one_store.api_url: \(server.baseURL)/commercial
        one_store.sandbox_url: \(server.baseURL)/sandbox
        one_store.client_id: \(fake.clientId), package_name: \(fake.packageName)
        scripted: \(Plural.count(script.purchases.count, "ONE store purchase"))
        """
    }

    package var requestCount: Int { fake.calls.count }

    package func stop() { server.stop() }
}
