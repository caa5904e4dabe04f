import Foundation
import SettleApp
import XCTest

/// scripts/install.sh lays out what the operations guide's install section describes; here into a
/// throwaway root, with the binary under test (users, groups and systemctl are left alone).
final class InstallTests: EndToEndTestCase {
    var repository: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path
    }

    func runInstall(root: String) throws -> (status: Int32, output: String) {
        try runScript("install.sh", ["--binary", SettleBinary.url.path, "--root", root, "--no-systemd"])
    }

    func runScript(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [repository + "/scripts/" + name] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    func testInstallScript_laysOutBinaryManPageCompletionsUnitsRootsAndACredentialsDropInForThePresentSecrets() throws {
        let root = world.folder + "/root"
        try FileManager.default.createDirectory(atPath: root + "/etc/settle/credentials", withIntermediateDirectories: true)
        try world.write(root + "/etc/settle/credentials/shared-secret", "s", mode: 0o600)
        let result = try runInstall(root: root)
        XCTAssertEqual(result.status, 0, result.output)
        for path in ["/usr/local/bin/settle", "/usr/local/share/man/man1/settle.1", "/usr/local/share/bash-completion/completions/settle",
                     "/usr/local/share/zsh/site-functions/_settle", "/etc/settle/settle.json", "/etc/settle/AppleRootCA-G3.pem",
                     "/etc/settle/AppleIncRootCA.pem", "/etc/systemd/system/settle.service", "/etc/systemd/system/settle@.service",
                     "/etc/systemd/system/settle-reconcile.timer", "/etc/systemd/system/settle.socket", "/usr/share/doc/settle/README.md", "/usr/share/doc/settle/LICENSE",
                     "/usr/share/doc/settle/docs/operations.md", "/usr/local/share/settle/settle.rules.yml",
                     "/usr/local/share/settle/settle.grafana.json"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: root + path), "missing \(path)")
        }
        let dropin = try String(contentsOfFile: root + "/etc/systemd/system/settle.service.d/credentials.conf", encoding: .utf8)
        XCTAssertTrue(dropin.contains("LoadCredential=shared-secret:/etc/settle/credentials/shared-secret"), dropin)
        XCTAssertFalse(dropin.contains("appstore-key.p8"), "only the secrets that exist: \(dropin)")
        let unit = try String(contentsOfFile: root + "/etc/systemd/system/settle.service", encoding: .utf8)
        XCTAssertTrue(unit.contains("User=settle\nGroup=settle-support"), unit)
        XCTAssertTrue(unit.contains("ExecReload=/usr/local/bin/settle check-config"), unit)
        XCTAssertTrue(unit.contains("Documentation=man:settle(1)"), unit)
    }

    func testInstallScript_neverOverwritesAnEditedConfiguration() throws {
        let root = world.folder + "/root"
        try FileManager.default.createDirectory(atPath: root + "/etc/settle", withIntermediateDirectories: true)
        try world.write(root + "/etc/settle/settle.json", "{\"edited\": true}")
        XCTAssertEqual(try runInstall(root: root).status, 0)
        XCTAssertEqual(try String(contentsOfFile: root + "/etc/settle/settle.json", encoding: .utf8), "{\"edited\": true}")
    }

    func testCheckConfig_ofTheInstalledLayout_findsSecretsInCredentials_andAcceptsTheStateFolderSystemdCreates() throws {
        let etc = world.folder + "/etc-settle"
        try FileManager.default.createDirectory(atPath: etc + "/credentials", withIntermediateDirectories: true)
        try world.write(etc + "/credentials/shared-secret", world.sharedSecret, mode: 0o600)
        try FileManager.default.copyItem(atPath: repository + "/config/AppleRootCA-G3.pem", toPath: etc + "/AppleRootCA-G3.pem")
        var config = try String(contentsOfFile: repository + "/config/settle.example.json", encoding: .utf8)
        config = config.replacingOccurrences(of: "/usr/local/bin/grant-goods", with: world.folder + "/grant.sh")
        try world.write(etc + "/settle.json", config)
        let result = try settleWithoutConfig(["check-config", "-c", etc + "/settle.json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("\(etc)/credentials/shared-secret (contents redacted)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("systemd creates it at the first start"), result.stdout)
        XCTAssertFalse(result.stdout.contains(world.sharedSecret))
    }

    /// What a newcomer meets first after installing: the shipped example, no secret yet. The
    /// message says where settle looked and where the secret goes.
    func testCheckConfig_ofTheShippedExample_beforeTheSecretExists_exits78SayingWhereItLookedAndWhereTheSecretGoes() throws {
        let etc = world.folder + "/etc-settle"
        try FileManager.default.createDirectory(atPath: etc + "/credentials", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: repository + "/config/AppleRootCA-G3.pem", toPath: etc + "/AppleRootCA-G3.pem")
        try FileManager.default.copyItem(atPath: repository + "/config/settle.example.json", toPath: etc + "/settle.json")
        let result = try settleWithoutConfig(["check-config", "-c", etc + "/settle.json"])
        XCTAssertEqual(result.status, 78, result.stderr)
        XCTAssertTrue(result.stderr.contains("receipt_api.shared_secret_file: no secret file: looked for \(etc)/credentials/shared-secret, \(etc)/shared-secret; put the secret in \(etc)/credentials/shared-secret (chmod 600)"), result.stderr)
    }

    /// The debug build links the Swift runtime from the toolchain (/opt/swift), which no Debian
    /// package provides: packaged, it would not start where the toolchain is not. The build
    /// refuses it, naming the library, and leaves no package behind.
    func testPackageDeb_refusesABinaryLinkingALibraryNoDebianPackageProvides_namingIt() throws {
        let out = world.folder + "/packages"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let result = try runScript("package-deb", [out, "--binary", SettleBinary.url.path])
        XCTAssertEqual(result.status, 70, result.output)
        XCTAssertTrue(result.output.contains("the binary links libswiftCore.so"), result.output)
        XCTAssertTrue(result.output.contains("which no Debian package provides"), result.output)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: out), [])
    }
}
